"""Linear-probe habit (self-supervised evaluation): a frozen backbone embeds the whole image set once under `torch.inference_mode()` through a worker-fed DataLoader, the features are cached in a TensorDataset, and only a linear head is trained for many epochs on an in-memory loader with no workers."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset


class Textures(Dataset):
    """32x32 oriented textures: summed gratings of a class-specific orientation, warped and box-blurred in numpy."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed
        self.yy, self.xx = np.mgrid[:32, :32].astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 31337 + i)
        label = int(rng.integers(10))
        theta = label * np.pi / 10 + rng.normal(0, 0.08)
        img = np.zeros((32, 32), np.float32)
        for f in (0.4, 0.7, 1.1):
            warp = 1.5 * np.sin(self.yy / rng.uniform(4, 8))
            img += np.cos(f * (np.cos(theta) * (self.xx + warp) + np.sin(theta) * self.yy) + rng.uniform(0, 6.3))
        img += rng.normal(0, 1.0, img.shape).astype(np.float32)
        for _ in range(16):
            p = np.pad(img, 1, mode="wrap")
            img = (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] + 2 * p[1:-1, 1:-1]) / 6
        return torch.from_numpy(img[None].copy()), label


class Backbone(nn.Module):
    """Stands in for a pretrained encoder: fixed random convolutions (frozen)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())

    def forward(self, x):
        return self.features(x)


@torch.inference_mode()
def extract_features(backbone, loader):
    backbone.eval()
    feats, labels = [], []
    for images, targets in loader:
        feats.append(backbone(images))
        labels.append(targets)
    return torch.cat(feats), torch.cat(labels)


def train_probe(head, loader, epochs, lr):
    opt = torch.optim.SGD(head.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    for epoch in range(epochs):
        total, n = 0.0, 0
        for feats, labels in loader:
            loss = F.cross_entropy(head(feats), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        sched.step()
        if epoch % 5 == 0 or epoch == epochs - 1:
            print(f"probe epoch {epoch:3d} batches {n} loss {total / n:.4f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=2, help="workers for the image loader (feature extraction)")
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    torch.manual_seed(0)

    backbone = Backbone()
    for p in backbone.parameters():
        p.requires_grad_(False)
    t0 = time.time()
    image_loader = DataLoader(Textures(16000, seed=2), batch_size=256, shuffle=False, num_workers=args.workers)
    feats, labels = extract_features(backbone, image_loader)
    feats = (feats - feats.mean(0)) / (feats.std(0) + 1e-6)
    print(f"extracted {tuple(feats.shape)} features in {time.time() - t0:.1f}s", flush=True)

    t0 = time.time()
    feat_loader = DataLoader(TensorDataset(feats, labels), batch_size=args.batch_size, shuffle=True)
    head = nn.Linear(feats.shape[1], 10)
    train_probe(head, feat_loader, args.epochs, args.lr)
    with torch.no_grad():
        acc = (head(feats).argmax(1) == labels).float().mean().item()
    print(f"probe trained in {time.time() - t0:.1f}s, train accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
