"""Benchmark-minded script that calls main() twice: a short warm-up run (a few steps, to get imports, allocator and thread pools settled) and then the real run, each building its own model, optimiser and DataLoader."""
import argparse
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Spectra(Dataset):
    """Synthetic 1-D 'spectra': a few Gaussian peaks whose positions depend on the class, plus a baseline drift,
    smoothed by a small moving average in numpy."""

    def __init__(self, n, length=256, seed=0):
        self.n, self.length, self.seed = n, length, seed
        rng = np.random.default_rng(seed)
        self.centres = rng.uniform(20, length - 20, size=(6, 4))

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng(self.seed * 7919 + idx)
        label = idx % 6
        x = np.arange(self.length, dtype=np.float64)
        s = np.zeros(self.length)
        for c in self.centres[label]:
            s += rng.uniform(0.5, 1.5) * np.exp(-0.5 * ((x - c - rng.normal(0, 3)) / rng.uniform(2, 6)) ** 2)
        s += np.cumsum(rng.normal(0, 0.05, self.length))  # baseline drift
        for _ in range(6):
            s = np.convolve(s, np.ones(5) / 5, mode="same")
        time.sleep(0.001)  # a small read from a slow store
        return torch.tensor(s, dtype=torch.float32), label


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--tag", default="train")
    args = p.parse_args(argv)

    torch.manual_seed(42)
    loader = DataLoader(Spectra(4096, seed=3), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.num_workers)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 6))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        total, batches = 0.0, 0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
            step += 1
            if args.max_steps and step >= args.max_steps:
                break
        print(f"[{args.tag}] epoch {epoch} batches {batches} loss {total / batches:.4f}", flush=True)
        if args.max_steps and step >= args.max_steps:
            break
    print(f"[{args.tag}] {step} steps in {time.perf_counter() - start:.1f}s", flush=True)


if __name__ == "__main__":
    main(["--epochs", "1", "--max-steps", "12", "--tag", "warmup"] + sys.argv[1:])
    main(sys.argv[1:])
