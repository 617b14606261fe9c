"""Preloaded tensors with GPU-style augmentation done on the batch in the training loop (kornia-like recipes run on
CPU): `TensorDataset` over tensors already in memory, so the loader only slices; each step then applies random
flips, a random affine warp (`F.affine_grid` / `F.grid_sample`), colour jitter and cutout to the whole batch in the
main process, before a small CNN. `--workers` has `choices=[0, 1, 2, 4]`, default 0.

A correct report: the loop is main()'s `for images_b, labels_b in loader:`; each of the 3 epochs keeps 25 batches; the
loader is NOT the bottleneck (the step, with its augmentation, is); advice should keep 0 (or say that workers won't
help), and any edit is `--workers N` or the `default=0` on the add_argument line.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def augment(x):
    b = x.shape[0]
    flip = torch.rand(b) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    ang = (torch.rand(b) - 0.5) * 0.6
    scale = 1 + (torch.rand(b) - 0.5) * 0.2
    theta = torch.zeros(b, 2, 3)
    theta[:, 0, 0] = torch.cos(ang) * scale
    theta[:, 0, 1] = -torch.sin(ang) * scale
    theta[:, 1, 0] = torch.sin(ang) * scale
    theta[:, 1, 1] = torch.cos(ang) * scale
    theta[:, :, 2] = (torch.rand(b, 2) - 0.5) * 0.2
    grid = F.affine_grid(theta, x.shape, align_corners=False)
    x = F.grid_sample(x, grid, align_corners=False, padding_mode="reflection")
    x = x * (1 + (torch.rand(b, 3, 1, 1) - 0.5) * 0.4) + (torch.rand(b, 3, 1, 1) - 0.5) * 0.2
    for _ in range(2):
        x = F.avg_pool2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), 3, stride=1)
    cy, cx = torch.randint(0, 48, (2,))
    x[:, :, cy:cy + 16, cx:cx + 16] = 0
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=0, choices=[0, 1, 2, 4])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    n = 1600
    labels = torch.randint(0, 4, (n,))
    base = torch.randn(4, 3, 64, 64)
    images = base[labels] + 0.7 * torch.randn(n, 3, 64, 64)
    loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(64, 4))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(args.epochs):
        t0, tot, nb = time.time(), 0.0, 0
        for images_b, labels_b in loader:
            with torch.no_grad():
                images_b = augment(images_b)
            loss = F.cross_entropy(model(images_b), labels_b)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            nb += 1
        print(f"epoch {epoch} loss {tot / nb:.4f} batches {nb} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
