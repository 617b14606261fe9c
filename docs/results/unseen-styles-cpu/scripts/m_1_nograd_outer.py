"""RL/meta-learning habit: the whole fit() is decorated @torch.no_grad() (evaluation and bookkeeping need no graph) and only the update step turns autograd back on with @torch.enable_grad()."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Glyphs(Dataset):
    """24x24 'glyphs': a class-dependent polyline drawn point by point, blurred and jittered, in numpy."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed
        self.shapes = np.random.default_rng(0).uniform(2, 21, size=(10, 6, 2))  # 10 classes, 6 control points each

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 1_000_003 + i)
        label = int(rng.integers(10))
        pts = self.shapes[label] + rng.normal(0, 3.0, size=(6, 2))
        img = np.zeros((24, 24), np.float32)
        for a, b in zip(pts[:-1], pts[1:]):
            for t in np.linspace(0, 1, 40):
                r, c = np.clip(np.round(a + t * (b - a)).astype(int), 0, 23)
                img[r, c] = 1.0
        k = np.array([0.25, 0.5, 0.25], np.float32)
        for _ in range(2):
            img = np.apply_along_axis(lambda v: np.convolve(v, k, mode="same"), 0, img)
            img = np.apply_along_axis(lambda v: np.convolve(v, k, mode="same"), 1, img)
        img += rng.normal(0, 0.4, size=img.shape).astype(np.float32)
        return torch.from_numpy(img).unsqueeze(0), label


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


@torch.enable_grad()
def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
        total += len(y)
    model.train()
    return correct / total


@torch.no_grad()
def fit(model, opt, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        t0, total, batches = time.time(), 0.0, 0
        for x, y in train_loader:
            total += train_step(model, opt, x, y)
            batches += 1
        acc = evaluate(model, val_loader)
        print(f"epoch {epoch} batches {batches} loss {total / batches:.4f} val_acc {acc:.3f} "
              f"({time.time() - t0:.1f}s)", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=7)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()
    torch.manual_seed(0)
    train_loader = DataLoader(Glyphs(1600, seed=1), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers)
    val_loader = DataLoader(Glyphs(256, seed=2), batch_size=128)
    model = SmallNet()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    fit(model, opt, train_loader, val_loader, args.epochs)


if __name__ == "__main__":
    main()
