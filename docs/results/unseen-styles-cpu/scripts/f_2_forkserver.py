"""Workers started by a forkserver, set once for the whole program (Python 3.14's default start method on Linux)."""
import argparse

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Chirps(Dataset):
    def __init__(self, n, length=256):
        g = torch.Generator().manual_seed(1)
        self.rate = torch.rand(n, generator=g) * 8 + 1
        self.length = length

    def __len__(self):
        return len(self.rate)

    def __getitem__(self, i):
        t = torch.linspace(0, 1, self.length)
        x = torch.sin(2 * torch.pi * self.rate[i] * t * t)
        for _ in range(25):
            x = 0.5 * x + 0.25 * (torch.roll(x, 1) + torch.roll(x, -1))
        return torch.fft.rfft(x).abs()[:64], int(self.rate[i] > 5)


def run(args):
    torch.manual_seed(0)
    loader = DataLoader(Chirps(8000), batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        running, n = 0.0, 0
        for features, target in loader:
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(features), target)
            loss.backward()
            opt.step()
            running += loss.item()
            n += 1
        print(f"epoch {epoch} loss {running / n:.4f} batches {n}")


if __name__ == "__main__":
    mp.set_start_method("forkserver", force=True)
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    run(p.parse_args())
