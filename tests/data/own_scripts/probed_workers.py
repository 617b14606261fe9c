"""A script that picks its own worker count, as some training scripts do (unseen t_4): it times a few batches of a
throw-away DataLoader for each candidate count, keeps the fastest and trains with it. The probe's loaders are freed
before training starts. Every epoch prints its batches and a digest of the sample order."""
import argparse
import hashlib
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowFiles(Dataset):
    def __init__(self, n, item_ms):
        self.n, self.item_s = n, item_ms / 1e3

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.item_s)
        return torch.full((16,), float(i % 7)), i


def probe(dataset, batch, candidates=(0, 1), batches=3):
    took = {}
    for workers in candidates:
        loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers)
        start = time.perf_counter()
        for k, _ in enumerate(loader):
            if k + 1 >= batches:
                break
        took[workers] = time.perf_counter() - start
    return min(took, key=took.get)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="auto", help="'auto' (time a few batches of each) or a number")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--items", type=int, default=128)
    ap.add_argument("--item-ms", type=float, default=2.0)
    ap.add_argument("-b", "--batch", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    data = SlowFiles(args.items, args.item_ms)
    workers = probe(data, args.batch) if args.workers == "auto" else int(args.workers)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=workers)
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 7))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        seen, digest = 0, hashlib.sha1()
        for x, idx in loader:
            loss = nn.functional.cross_entropy(net(x), idx % 7)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += 1
            digest.update(idx.numpy().tobytes())
        print(f"epoch {epoch} batches {seen} order {digest.hexdigest()[:12]}", flush=True)


if __name__ == "__main__":
    main()
