"""Spawn-context DataLoader (macOS/Windows-minded): module-level Dataset, training in main() under __main__."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisySignals(Dataset):
    """Synthetic 1-D signals; each item is filtered and normalised on the fly (CPU work per item)."""

    def __init__(self, n, length=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.freq = torch.rand(n, generator=g) * 20 + 1
        self.phase = torch.rand(n, generator=g) * 2 * math.pi
        self.labels = (self.freq > 11).long()
        self.length = length

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        t = torch.linspace(0, 1, self.length)
        x = torch.sin(2 * math.pi * self.freq[i] * t + self.phase[i])
        g = torch.Generator().manual_seed(int(i))
        x = x + 0.3 * torch.randn(self.length, generator=g)
        for _ in range(30):  # a cheap smoothing filter applied repeatedly
            x = 0.5 * x + 0.25 * (torch.roll(x, 1) + torch.roll(x, -1))
        spec = torch.fft.rfft(x).abs()[:64]
        spec = (spec - spec.mean()) / (spec.std() + 1e-6)
        return spec, self.labels[i]


def train_epoch(model, loader, opt):
    model.train()
    total, batches = 0.0, 0
    for x, y in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
        batches += 1
    return total / batches, batches


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--n", type=int, default=9000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()

    torch.manual_seed(0)
    ds = NoisySignals(args.n)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        multiprocessing_context="spawn" if args.workers > 0 else None)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        loss, batches = train_epoch(model, loader, opt)
        print(f"epoch {epoch} loss {loss:.4f} batches {batches}")


if __name__ == "__main__":
    main()
