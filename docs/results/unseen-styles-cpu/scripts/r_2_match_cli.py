"""A Python 3.10+ script whose command line is parsed by a `match` statement over sys.argv (no argparse, no getopt):
`-w/--workers N`, `--epochs N`, `--steps N`, `--lr X`, `--help`; the settings live in one `cfg` dict written on one
line. Each epoch is a fixed budget of steps taken by `for step, (x, y) in zip(range(cfg["steps"]), loader)`, so every
epoch abandons its iterator part-way through the shuffled loader (70 of 93 batches). A small 1-D conv net on signals
that each item filters in numpy (about 1 ms an item). Default: 0 workers.

A correct report: the loop is train()'s zip line; every epoch keeps 70 batches; the edit is `--workers N` (the one
option the job passes), not a number hard-coded on the DataLoader's line, which would leave `--workers` dead.
"""
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

USAGE = "usage: r_2_match_cli.py [-w|--workers N] [--epochs N] [--steps N] [--lr X] [--seed N]"


def parse_cli(argv):
    cfg = {"workers": 0, "epochs": 4, "steps": 70, "batch": 32, "lr": 3e-3, "seed": 0}
    rest = list(argv)
    while rest:
        match rest:
            case ["-h" | "--help", *_]:
                print(USAGE)
                raise SystemExit(0)
            case ["-w" | "--workers", n, *tail] if n.isdigit():
                cfg["workers"], rest = int(n), tail
            case ["--epochs", n, *tail]:
                cfg["epochs"], rest = int(n), tail
            case ["--steps", n, *tail]:
                cfg["steps"], rest = int(n), tail
            case ["--lr", x, *tail]:
                cfg["lr"], rest = float(x), tail
            case ["--seed", n, *tail]:
                cfg["seed"], rest = int(n), tail
            case [other, *_]:
                print(f"unknown option {other!r}\n{USAGE}", file=sys.stderr)
                raise SystemExit(2)
    return cfg


class Signals(Dataset):
    def __init__(self, n=3000, length=2048, seed=0):
        g = np.random.default_rng(seed)
        self.freq = g.integers(1, 5, n)
        self.phase = g.random(n)
        self.t = np.linspace(0, 1, length, dtype=np.float32)

    def __len__(self):
        return len(self.freq)

    def __getitem__(self, i):
        noise = np.random.default_rng(i).standard_normal(self.t.shape).astype(np.float32)
        x = np.sin(2 * np.pi * (self.freq[i] * self.t + self.phase[i])).astype(np.float32) + 0.8 * noise
        kernel = np.hanning(15).astype(np.float32)
        for _ in range(24):  # a filter bank, as feature extraction would be
            x = np.convolve(x, kernel / kernel.sum(), mode="same")
        return torch.from_numpy(x[None]), int(self.freq[i]) - 1


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv1d(1, 32, 9, padding=4), nn.Conv1d(32, 64, 9, padding=4)
        self.fc = nn.Linear(64, 4)

    def forward(self, x):
        x = F.max_pool1d(F.relu(self.c1(x)), 4)
        x = F.relu(self.c2(x)).mean(dim=2)
        return self.fc(x)


def train(cfg, model, loader, optimizer):
    for epoch in range(cfg["epochs"]):
        model.train()
        t0, total, n = time.perf_counter(), 0.0, 0
        for step, (x, y) in zip(range(cfg["steps"]), loader):
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total, n = total + loss.item(), n + 1
        print(f"epoch {epoch} steps {n} loss {total / n:.4f} ({time.perf_counter() - t0:.1f}s)", flush=True)


def main(argv):
    cfg = parse_cli(argv)
    torch.manual_seed(cfg["seed"])
    loader = DataLoader(Signals(seed=cfg["seed"]), batch_size=cfg["batch"], shuffle=True,
                        num_workers=cfg["workers"], drop_last=True)
    model = ConvNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    print(f"{len(loader)} batches an epoch, {cfg['steps']} taken, workers {cfg['workers']}")
    train(cfg, model, loader, optimizer)


if __name__ == "__main__":
    main(sys.argv[1:])
