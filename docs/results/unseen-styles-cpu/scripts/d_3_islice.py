"""Fixed number of steps per epoch: `enumerate(itertools.islice(loader, steps_per_epoch))`, the loader being longer
than the steps used (as in RL/contrastive code and many 'iterations per epoch' scripts)."""
import argparse
import itertools

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisySignals(Dataset):
    """1-D signals of 512 samples; each item is filtered and normalised in numpy (per-item CPU work)."""

    def __init__(self, n=20000, length=512, classes=5, seed=0):
        rng = np.random.default_rng(seed)
        self.freqs = rng.uniform(1.0, 40.0, size=n).astype(np.float32)
        self.labels = rng.integers(0, classes, size=n)
        self.length = length

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx)
        t = np.linspace(0, 1, self.length, dtype=np.float32)
        label = int(self.labels[idx])
        x = np.sin(2 * np.pi * self.freqs[idx] * t) + (label + 1) * 0.3 * np.sin(2 * np.pi * 5 * (label + 1) * t)
        x = x + rng.normal(0, 1.0, self.length).astype(np.float32)
        for _ in range(3):  # moving-average smoothing, a stand-in for a band-pass filter
            x = np.convolve(x, np.ones(9, dtype=np.float32) / 9, mode="same")
        spec = np.abs(np.fft.rfft(x))[:128].astype(np.float32)
        x = (x - x.mean()) / (x.std() + 1e-6)
        return torch.from_numpy(np.stack([x[:256], x[256:]]).astype(np.float32)), torch.from_numpy(spec), label


class SignalNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(2, 32, 7, padding=3), nn.ReLU(), nn.MaxPool1d(4),
                                  nn.Conv1d(32, 64, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1))
        self.spec = nn.Sequential(nn.Linear(128, 64), nn.ReLU())
        self.head = nn.Linear(128, classes)

    def forward(self, x, spec):
        return self.head(torch.cat([self.conv(x).flatten(1), self.spec(spec)], dim=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--steps-per-epoch", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    dataset = NoisySignals(seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
                        drop_last=True)
    model = SignalNet()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    print(f"loader has {len(loader)} batches; using {args.steps_per_epoch} per epoch", flush=True)

    for epoch in range(args.epochs):
        model.train()
        total, seen = 0.0, 0
        for step, (x, spec, y) in enumerate(itertools.islice(loader, args.steps_per_epoch)):
            logits = model(x, spec)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            seen += 1
            if (step + 1) % args.log_every == 0:
                print(f"  epoch {epoch} step {step + 1}/{args.steps_per_epoch} loss {loss.item():.4f}", flush=True)
        print(f"epoch {epoch} loss {total / seen:.4f} batches {seen}", flush=True)


if __name__ == "__main__":
    main()
