"""Lightweight-recipe style (timm/ConvNeXt-like small repos): `random_split` into train/val, an EMA copy of the
model updated after every optimizer step (`torch.optim.swa_utils.AveragedModel` with an EMA avg_fn), OneCycleLR
sized with `steps_per_epoch=len(train_loader)` and `drop_last=True`, and a validation pass of the EMA model each
epoch under `torch.inference_mode()`. The worker counts are literals in the two DataLoader calls: `num_workers=1`
(train) and `num_workers=1` (val). Loop: `for images, labels in train_loader` in fit().

A correct report: the loop is fit()'s `for images, labels in train_loader` (not the val loop); 1600 items split
1344/256, batch 48 with drop_last -> 28 batches per epoch, 3 epochs; the count is the literal `num_workers=1` on the
train DataLoader line (edit that literal). OneCycleLR's total steps = 3*28: if the profiler stops or changes the
number of steps, the scheduler would raise "Tried to step ... times" - it must not.
"""
import copy
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel
from torch.utils.data import DataLoader, Dataset, random_split


class Blobs(Dataset):
    def __init__(self, n=1600):
        self.y = np.random.default_rng(3).integers(0, 6, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(7 * i + 3)
        y = int(self.y[i])
        yy, xx = np.mgrid[0:32, 0:32].astype(np.float32)
        cx, cy = 5 + 4 * y, 16 + g.uniform(-4, 4)
        img = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 18.0).astype(np.float32)
        img += 0.3 * g.standard_normal((32, 32)).astype(np.float32)
        time.sleep(0.002)
        return torch.from_numpy(img)[None], y


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(128, 6)

    def forward(self, x):
        return self.head(self.f(x).flatten(1))


def fit(model, ema, train_loader, opt, sched):
    model.train()
    tot, n = 0.0, 0
    for images, labels in train_loader:
        loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        ema.update_parameters(model)
        tot += loss.item()
        n += 1
    return tot / n, n


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.inference_mode():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += len(labels)
    return correct / total


def main():
    torch.manual_seed(0)
    full = Blobs()
    train_set, val_set = random_split(full, [1344, 256], generator=torch.Generator().manual_seed(42))
    train_loader = DataLoader(train_set, batch_size=48, shuffle=True, drop_last=True, num_workers=1)
    val_loader = DataLoader(val_set, batch_size=128, shuffle=False, num_workers=1)
    model = SmallNet()
    ema = AveragedModel(model, avg_fn=lambda avg, p, n: 0.99 * avg + 0.01 * p)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    epochs = 3
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-3, epochs=epochs, steps_per_epoch=len(train_loader))
    for epoch in range(epochs):
        t0 = time.time()
        loss, n = fit(model, ema, train_loader, opt, sched)
        acc = evaluate(ema.module, val_loader)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} ema_val_acc {acc:.3f} workers {train_loader.num_workers} "
              f"({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
