"""A script that picks its own worker count, as in the "find the best num_workers" snippets on blogs and forums:
`--workers auto` (the default) times the first 6 batches of a throw-away DataLoader for each candidate in
(0, 1, 2), keeps the fastest, and then trains with that count; `--workers N` skips the probe. The epoch loop is a
plain `for x, y in loader` with a cosine LR schedule stepped per batch. Data: 2x40x40 noisy rings rasterised in numpy
per item (~4 ms an item); a small CNN.

A correct report: the loop is train()'s (the probe's `for` only times batches and does no step); each of the 5
epochs keeps 60 batches; the count is chosen at run time, so the edit is `--workers N`, and the report should say
that the script's own probe decides the count when it is not given.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Rings(Dataset):
    def __init__(self, n=1920):
        g = np.random.default_rng(3)
        self.radius = g.uniform(4, 16, size=n)
        self.labels = (self.radius > 10).astype(np.int64)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        yy, xx = np.mgrid[0:40, 0:40].astype(np.float32)
        c = 20 + np.random.uniform(-3, 3, size=2)
        d = np.sqrt((yy - c[0]) ** 2 + (xx - c[1]) ** 2)
        ring = np.exp(-((d - self.radius[i]) ** 2) / 2.0)
        img = np.stack([ring, ring.T]) + 0.3 * np.random.randn(2, 40, 40)
        time.sleep(0.003)
        return torch.from_numpy(img.astype(np.float32)), int(self.labels[i])


def probe_workers(dataset, batch_size, candidates=(0, 1, 2), n_batches=6):
    timings = {}
    for nw in candidates:
        dl = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=nw)
        t0 = time.perf_counter()
        for k, _ in enumerate(dl):
            if k + 1 >= n_batches:
                break
        timings[nw] = time.perf_counter() - t0
        del dl
    best = min(timings, key=timings.get)
    print("probe:", {k: round(v, 3) for k, v in timings.items()}, "-> num_workers =", best)
    return best


def train(model, loader, epochs, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
    for epoch in range(epochs):
        model.train()
        t0, tot, n = time.perf_counter(), 0.0, 0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += loss.item() * len(y)
            n += len(y)
        print(f"epoch {epoch} loss {tot / n:.4f} ({time.perf_counter() - t0:.1f}s)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", default="auto", help="'auto' or an integer")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = Rings()
    workers = probe_workers(ds, args.batch_size) if args.workers == "auto" else int(args.workers)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=workers,
                        persistent_workers=workers > 0)
    model = nn.Sequential(nn.Conv2d(2, 16, 5, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 2))
    print(f"training with num_workers={workers}, {len(loader)} batches/epoch")
    train(model, loader, args.epochs, args.lr)


if __name__ == "__main__":
    main()
