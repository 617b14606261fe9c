"""Testable-CLI style (pip-installable research packages, console_scripts entry points): `def main(argv=None)`
builds its parser and calls `parser.parse_args(argv)`, returns 0, and the module ends with
`if __name__ == "__main__": sys.exit(main())`. The script itself calls `torch.set_num_threads(1)` at import. The
dataset is a siamese/contrastive one: each item is a pair `(a, b, same)`; the loss is a contrastive margin loss.
Loop: `for it, (a, b, same) in enumerate(loader, start=1)` in run_epoch().

A correct report: the loop is run_epoch()'s `for it, (a, b, same) in enumerate(loader, start=1)`; 3 epochs of 32
batches (1024 pairs, batch 32); the count is `--workers` (default 0 in add_argument): the edit is
`--workers N` on the command line or the `default=0` of that option. The profiled run must exit 0 like the plain
run (sys.exit(0)), and the script's own set_num_threads(1) is part of its behaviour.
"""
import argparse
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)


class Pairs(Dataset):
    def __init__(self, n=1024, dim=64):
        g = np.random.default_rng(5)
        self.protos = g.standard_normal((10, dim)).astype(np.float32)
        self.n = n

    def __len__(self):
        return self.n

    def _view(self, c, g):
        v = self.protos[c] + 0.6 * g.standard_normal(self.protos.shape[1]).astype(np.float32)
        return np.tanh(np.convolve(v, np.ones(5, np.float32) / 5, mode="same")).astype(np.float32)

    def __getitem__(self, i):
        g = np.random.default_rng(11 * i + 1)
        c1 = int(g.integers(10))
        same = bool(i % 2)
        c2 = c1 if same else int((c1 + 1 + g.integers(9)) % 10)
        time.sleep(0.004)
        return torch.from_numpy(self._view(c1, g)), torch.from_numpy(self._view(c2, g)), torch.tensor(float(same))


class Encoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 32))

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


def contrastive(za, zb, same, margin=0.5):
    d = (za - zb).pow(2).sum(1).sqrt()
    return (same * d.pow(2) + (1 - same) * F.relu(margin - d).pow(2)).mean()


def run_epoch(enc, loader, opt):
    enc.train()
    tot = 0.0
    it = 0
    for it, (a, b, same) in enumerate(loader, start=1):
        loss = contrastive(enc(a), enc(b), same)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
    return tot / it, it


def main(argv=None):
    p = argparse.ArgumentParser(prog="siamese-train")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args(argv)
    torch.manual_seed(0)
    loader = DataLoader(Pairs(), batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    enc = Encoder()
    opt = torch.optim.Adam(enc.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        loss, n = run_epoch(enc, loader, opt)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} workers {loader.num_workers} ({time.time() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
