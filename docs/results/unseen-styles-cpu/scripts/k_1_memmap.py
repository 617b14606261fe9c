"""Features stored as .npy on disk and read through a numpy memmap opened lazily in __getitem__ (one handle per
worker process), as large-dataset code does to avoid loading everything into RAM. The arrays are written to /tmp
on first run. Per item: a slice of the memmap, a random crop and a small spectral feature computed in numpy."""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

DATA_DIR = "/tmp/k1_memmap_data"


def prepare(n, length, seed=0):
    """Write a synthetic signal corpus to disk once (like a preprocessing step)."""
    os.makedirs(DATA_DIR, exist_ok=True)
    xp, yp = os.path.join(DATA_DIR, f"x_{n}_{length}.npy"), os.path.join(DATA_DIR, f"y_{n}.npy")
    if not (os.path.exists(xp) and os.path.exists(yp)):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 4, size=n).astype(np.int64)
        t = np.linspace(0, 1, length, dtype=np.float32)
        x = np.lib.format.open_memmap(xp + ".tmp", mode="w+", dtype=np.float32, shape=(n, length))
        for i in range(0, n, 1000):
            j = min(n, i + 1000)
            f = (y[i:j, None] + 1) * 5.0
            x[i:j] = np.sin(2 * np.pi * f * t[None]) + rng.normal(0, 4.0, (j - i, length)).astype(np.float32)
        x.flush()
        del x
        os.replace(xp + ".tmp", xp)
        np.save(yp, y)
    return xp, yp


class MemmapSignals(Dataset):
    def __init__(self, x_path, y_path, crop=512):
        self.x_path = x_path
        self.y = np.load(y_path)
        self.crop = crop
        self._x = None  # opened lazily, so each worker gets its own handle

    def __len__(self):
        return len(self.y)

    @property
    def x(self):
        if self._x is None:
            self._x = np.load(self.x_path, mmap_mode="r")
        return self._x

    def __getitem__(self, idx):
        row = np.asarray(self.x[idx], dtype=np.float32)
        start = np.random.randint(0, row.shape[0] - self.crop + 1)
        seg = row[start:start + self.crop].copy()
        for _ in range(400):  # cheap denoising: repeated 3-tap smoothing
            seg[1:-1] = 0.25 * seg[:-2] + 0.5 * seg[1:-1] + 0.25 * seg[2:]
        spec = np.abs(np.fft.rfft(seg))[:128]
        spec = np.log1p(spec)
        spec = (spec - spec.mean()) / (spec.std() + 1e-6)
        return torch.from_numpy(spec.astype(np.float32)), int(self.y[idx])


class Classifier(nn.Module):
    def __init__(self, d_in=128, hidden=256, n_cls=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_cls)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.relu(self.fc1(x)))))


def run_epoch(model, loader, optimizer):
    model.train()
    running, batches = 0.0, 0
    for features, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(features), labels)
        loss.backward()
        optimizer.step()
        running += loss.item()
        batches += 1
    return running / max(batches, 1), batches


def main():
    parser = argparse.ArgumentParser(description="memmap-backed training")
    parser.add_argument("--n", type=int, default=4800)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    np.random.seed(0)
    torch.manual_seed(0)
    x_path, y_path = prepare(args.n, args.length)
    dataset = MemmapSignals(x_path, y_path)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        loss, batches = run_epoch(model, loader, optimizer)
        print(f"epoch {epoch} loss {loss:.4f} batches {batches} ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
