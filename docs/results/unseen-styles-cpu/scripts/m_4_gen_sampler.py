"""A hand-written chunk-shuffle Sampler whose __iter__ is a generator (and whose __len__ counts a tail it never yields), a collate_fn that is a class instance with __call__, pin_memory=True, and a baseline validation pass before the first epoch."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler


class ChunkShuffleSampler(Sampler):
    """Shuffle chunks of neighbouring indices, then within each chunk (locality for a sharded store). Chunks that are
    not full are dropped, but __len__ still says len(data_source): one batch more than it yields, here."""

    def __init__(self, data_source, chunk=64, seed=0):
        self.n, self.chunk = len(data_source), chunk
        self.g = torch.Generator().manual_seed(seed)

    def _indices(self):
        full = self.n // self.chunk
        for c in torch.randperm(full, generator=self.g).tolist():
            for j in torch.randperm(self.chunk, generator=self.g).tolist():
                yield c * self.chunk + j

    def __iter__(self):
        return self._indices()

    def __len__(self):
        return self.n


class Pairs(Dataset):
    """Regression on tabular rows: 40 features made by a little numpy work; the target a fixed nonlinear function."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed
        self.w = np.random.default_rng(99).normal(size=(40,))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 65537 + i)
        raw = rng.normal(size=(40, 16))
        feats = np.tanh(raw @ rng.normal(size=(16, 16)) / 4).mean(axis=1)
        for _ in range(20):
            feats = 0.9 * feats + 0.1 * np.sin(feats * 3)
        target = float(np.tanh(feats @ self.w) + 0.05 * rng.normal())
        time.sleep(0.002)
        return {"x": feats.astype(np.float32), "y": np.float32(target)}


class DictCollator:
    """Stacks a list of {"x", "y"} dicts into tensors, optionally standardising x with fixed statistics."""

    def __init__(self, standardise=True):
        self.standardise = standardise

    def __call__(self, items):
        x = torch.from_numpy(np.stack([it["x"] for it in items]))
        y = torch.tensor([it["y"] for it in items])
        if self.standardise:
            x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-6)
        return x, y


def evaluate(model, loader):
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += F.mse_loss(model(x).squeeze(1), y, reduction="sum").item()
            n += len(y)
    model.train()
    return total / n


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--bs", type=int, default=32)
    p.add_argument("--nw", type=int, default=2, help="DataLoader workers")
    args = p.parse_args()
    torch.manual_seed(7)
    train_set, val_set = Pairs(1600 + 20, seed=1), Pairs(320, seed=2)
    collate = DictCollator()
    train_loader = DataLoader(train_set, batch_size=args.bs, sampler=ChunkShuffleSampler(train_set, seed=5),
                              collate_fn=collate, num_workers=args.nw, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=64, collate_fn=collate, num_workers=args.nw, pin_memory=True)
    model = nn.Sequential(nn.Linear(40, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    print(f"train batches (len): {len(train_loader)}, baseline val mse {evaluate(model, val_loader):.4f}",
          flush=True)
    for epoch in range(args.epochs):
        total, batches = 0.0, 0
        for x, y in train_loader:
            loss = F.mse_loss(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        print(f"epoch {epoch} batches {batches} train mse {total / batches:.4f} "
              f"val mse {evaluate(model, val_loader):.4f}", flush=True)


if __name__ == "__main__":
    main()
