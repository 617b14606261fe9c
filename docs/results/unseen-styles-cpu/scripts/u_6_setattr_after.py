"""Distributed-ready script run as one process: `DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True)` with
`sampler.set_epoch(epoch)` each epoch (world size from WORLD_SIZE, 1 here). The loader comes from a shared helper
`build_loader(ds, sampler, batch_size)` that always builds it with `num_workers=0`; the script then sets the count
on the object: `train_loader.num_workers = args.workers` (DataLoader allows it before the first iteration; the next
line sets prefetch_factor to match), as code that tweaks a library-made loader does. `--workers` defaults to 2.

A correct report: the loop is main()'s `for it, (x, y) in enumerate(train_loader):`; each of the 3 epochs keeps
900 / 30 = 30 batches; the run used 2 workers (set by the assignment line, NOT the `num_workers=0` in
build_loader); an edit on build_loader's line would change nothing. The edit: `--workers N`, or the assignment.
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def build_loader(ds, sampler, batch_size):
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=0, drop_last=False)


class Patches(Dataset):
    def __init__(self, n=900):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = i % 4
        img = g.standard_normal((3, 32, 32)).astype(np.float32)
        img[y % 3] += np.outer(np.hanning(32), np.hanning(32)).astype(np.float32) * 0.15 * (1 + y)
        img = np.stack([np.fft.irfft2(np.fft.rfft2(c) * 0.9, s=c.shape) for c in img]).astype(np.float32)
        time.sleep(0.006)
        return torch.from_numpy(img), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=30)
    args = ap.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    torch.manual_seed(0)
    ds = Patches()
    sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    train_loader = build_loader(ds, sampler, args.batch_size)
    train_loader.num_workers = args.workers
    train_loader.prefetch_factor = 2 if args.workers > 0 else None
    model = nn.Sequential(nn.Conv2d(3, 16, 5, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                          nn.Flatten(), nn.Linear(32 * 6 * 6, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        t0, tot = time.time(), 0.0
        for it, (x, y) in enumerate(train_loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        if rank == 0:
            print(f"epoch {epoch} loss {tot / (it + 1):.4f} batches {it + 1} "
                  f"workers {train_loader.num_workers} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
