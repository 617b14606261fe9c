"""Image-tutorial style: the channel mean/std are first computed by a full pass over the training set through a non-shuffling DataLoader, then a Normalize transform is set and the model trains with a shuffling one."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class TinyTextures(Dataset):
    """RGB 24x24 textures of 5 classes, made from seeded noise and blurred in numpy; `normalize` set after the stats pass."""

    def __init__(self, n=5000, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 5, size=n)
        self.seeds = rng.integers(0, 2**31, size=n)
        self.normalize = None  # (mean, std) per channel, once known

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        c = int(self.labels[idx])
        rng = np.random.default_rng(int(self.seeds[idx]))
        img = rng.random((3, 24, 24))
        k = 2 + c  # blur radius by class: the texture's grain tells the class
        for _ in range(3):
            img = sum(np.roll(img, s, axis=2) for s in range(-k, k + 1)) / (2 * k + 1)
            img = sum(np.roll(img, s, axis=1) for s in range(-k, k + 1)) / (2 * k + 1)
        img = img * (0.5 + 0.1 * np.arange(3))[:, None, None] + 0.2
        x = torch.from_numpy(img.astype(np.float32))
        if self.normalize is not None:
            mean, std = self.normalize
            x = (x - mean[:, None, None]) / std[:, None, None]
        return x, c


def channel_stats(dataset, workers):
    """Mean and std per channel over the whole dataset (the usual two-sums pass)."""
    loader = DataLoader(dataset, batch_size=256, shuffle=False, num_workers=workers)
    s = torch.zeros(3, dtype=torch.float64)
    s2 = torch.zeros(3, dtype=torch.float64)
    count = 0
    for x, _ in loader:
        s += x.double().sum(dim=(0, 2, 3))
        s2 += (x.double() ** 2).sum(dim=(0, 2, 3))
        count += x.shape[0] * x.shape[2] * x.shape[3]
    mean = s / count
    std = (s2 / count - mean ** 2).sqrt()
    return mean.float(), std.float()


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 6 * 6, 5),
    )


def train(args):
    torch.manual_seed(args.seed)
    train_set = TinyTextures(args.n, seed=args.seed)
    t0 = time.time()
    mean, std = channel_stats(train_set, args.workers)
    print(f"channel mean {[round(v, 4) for v in mean.tolist()]} std {[round(v, 4) for v in std.tolist()]} "
          f"({time.time() - t0:.1f}s)", flush=True)
    train_set.normalize = (mean, std)

    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.time()
        seen = correct = 0
        total = 0.0
        for i, (x, y) in enumerate(train_loader):
            opt.zero_grad()
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            total += loss.item() * y.size(0)
            correct += (out.argmax(1) == y).sum().item()
            seen += y.size(0)
        print(f"Epoch {epoch}/{args.epochs}  loss={total / seen:.4f}  acc={correct / seen:.3f}  "
              f"batches={i + 1}  time={time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="texture classifier")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    train(ap.parse_args())
