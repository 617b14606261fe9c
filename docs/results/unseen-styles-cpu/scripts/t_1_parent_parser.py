"""argparse with parent parsers, as repos with several entry points share their options: `common_parser()`
(add_help=False) defines --workers (default 0), --seed and --batch-size; the training parser is built with
`parents=[common_parser(), optim_parser()]` and then overrides the inherited default with
`parser.set_defaults(workers=1)`. The loop is `for step, (x, y) in enumerate(loader, start=1)` with gradient
accumulation every --accum steps (a last partial group flushed after the loop); a worker_init_fn seeds numpy.
Data: 16-channel 1-D signals smoothed in numpy per item (~4 ms an item), a small MLP.

A correct report: the loop is train_epoch()'s; each of the 5 epochs keeps 40 batches; the edit is `--workers N`
(or the set_defaults line, which is where the default 1 comes from, NOT the parent's `default=0`).
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def common_parser():
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("common")
    g.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--batch-size", type=int, default=32)
    return p


def optim_parser():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    return p


def build_train_parser():
    parser = argparse.ArgumentParser(description="signal classifier", parents=[common_parser(), optim_parser()])
    parser.add_argument("--epochs", type=int, default=5)
    parser.set_defaults(workers=1)
    return parser


class Signals(Dataset):
    def __init__(self, n=1280, length=256, seed=0):
        rng = np.random.default_rng(seed)
        self.freq = rng.uniform(1, 8, size=n).astype(np.float32)
        self.labels = (self.freq > 4.5).astype(np.int64)
        self.length = length

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        t = np.linspace(0, 1, self.length, dtype=np.float32)
        noise = np.random.standard_normal((16, self.length)).astype(np.float32)
        x = np.sin(2 * np.pi * self.freq[i] * t)[None, :] + 0.8 * noise
        kernel = np.ones(9, dtype=np.float32) / 9
        x = np.stack([np.convolve(row, kernel, mode="same") for row in x])
        time.sleep(0.003)
        return torch.from_numpy(x[:, ::4].reshape(-1).copy()), int(self.labels[i])


def seed_worker(worker_id):
    np.random.seed(torch.initial_seed() % 2**32)


def train_epoch(model, loader, opt, accum):
    model.train()
    total, n = 0.0, 0
    opt.zero_grad()
    for step, (x, y) in enumerate(loader, start=1):
        loss = F.cross_entropy(model(x), y)
        (loss / accum).backward()
        if step % accum == 0:
            opt.step()
            opt.zero_grad()
        total += loss.item() * len(y)
        n += len(y)
    if step % accum:
        opt.step()
        opt.zero_grad()
    return total / n, step


def main():
    args = build_train_parser().parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    loader = DataLoader(Signals(seed=args.seed), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, worker_init_fn=seed_worker,
                        generator=torch.Generator().manual_seed(args.seed))
    model = nn.Sequential(nn.Linear(16 * 64, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    print(f"workers={args.workers} batches/epoch={len(loader)}")
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        loss, steps = train_epoch(model, loader, opt, args.accum)
        print(f"epoch {epoch} loss {loss:.4f} batches {steps} ({time.perf_counter() - t0:.1f}s)")


if __name__ == "__main__":
    main()
