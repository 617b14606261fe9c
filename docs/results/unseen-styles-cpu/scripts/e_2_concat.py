"""ConcatDataset of two synthetic sources with different per-item cost; SubsetRandomSampler train split,
validation loader over the rest evaluated once per epoch."""
import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import ConcatDataset, DataLoader, Dataset, SubsetRandomSampler


class CheapTabular(Dataset):
    """Source A: precomputed features, light per-item work."""

    def __init__(self, n, dim=48, seed=0):
        rng = np.random.RandomState(seed)
        self.x = rng.randn(n, dim).astype(np.float32)
        self.y = (self.x[:, :8].sum(1) > 0).astype(np.int64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        x = self.x[idx]
        x = (x - x.mean()) / (x.std() + 1e-6)
        return torch.from_numpy(x), int(self.y[idx])


class ExpensiveImages(Dataset):
    """Source B: small 'images' rendered and pooled to features per item (heavier CPU work)."""

    def __init__(self, n, dim=48, seed=1):
        rng = np.random.RandomState(seed)
        self.params = rng.rand(n, 4).astype(np.float32)
        self.y = (self.params[:, 0] > 0.5).astype(np.int64)
        self.dim = dim

    def __len__(self):
        return len(self.params)

    def __getitem__(self, idx):
        a, b, c, d = self.params[idx]
        yy, xx = np.mgrid[0:64, 0:64].astype(np.float32) / 64.0
        img = np.sin(10 * a * xx + 7 * b * yy) * np.cos(5 * c * xx * yy + d)
        for _ in range(40):
            img = 0.25 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        feats = np.abs(np.fft.rfft2(img))[:6, :8].reshape(-1)
        feats = (feats - feats.mean()) / (feats.std() + 1e-6)
        return torch.from_numpy(feats.astype(np.float32)), int(self.y[idx])


@torch.no_grad()
def evaluate(model, loader, loss_fn):
    model.eval()
    total, correct, seen = 0.0, 0, 0
    for x, y in loader:
        out = model(x)
        total += loss_fn(out, y).item() * len(y)
        correct += (out.argmax(1) == y).sum().item()
        seen += len(y)
    model.train()
    return total / seen, correct / seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", default=4, type=int)
    parser.add_argument("--batch_size", default=64, type=int)
    parser.add_argument("--num_workers", default=1, type=int)
    parser.add_argument("--val_fraction", default=0.2, type=float)
    parser.add_argument("--lr", default=0.05, type=float)
    args = parser.parse_args()

    torch.manual_seed(42)
    dataset = ConcatDataset([CheapTabular(8000), ExpensiveImages(4000)])
    indices = torch.randperm(len(dataset)).tolist()
    split = int(len(dataset) * (1 - args.val_fraction))
    train_idx, val_idx = indices[:split], indices[split:]

    train_loader = DataLoader(dataset, batch_size=args.batch_size, sampler=SubsetRandomSampler(train_idx),
                              num_workers=args.num_workers)
    val_loader = DataLoader(dataset, batch_size=256, sampler=val_idx, num_workers=args.num_workers)

    model = nn.Sequential(nn.Linear(48, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 2))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        running, n_batches = 0.0, 0
        for inputs, targets in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            running += loss.item()
            n_batches += 1
        val_loss, val_acc = evaluate(model, val_loader, loss_fn)
        print(f"epoch {epoch} loss {running / n_batches:.4f} batches {n_batches} val_loss {val_loss:.4f} val_acc {val_acc:.3f}")


if __name__ == "__main__":
    main()
