"""A DDP-ready script run on one device: main() hands the work to torch.multiprocessing.spawn(nprocs=1), so the
training loop runs in a child process, not in the one that was started."""
import argparse

import torch
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def worker(rank, args):
    torch.manual_seed(0)
    x = torch.randn(12000, 32)
    y = (x[:, :4].sum(1) > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        total = 0.0
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"rank {rank} epoch {epoch} loss {total / len(loader):.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    mp.spawn(worker, args=(args,), nprocs=1, join=True)


if __name__ == "__main__":
    main()
