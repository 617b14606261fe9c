"""DataLoader options as an argparse *argument group* whose parsed values are spread into the DataLoader:
`loader_kwargs = {a.dest: getattr(args, a.dest) for a in loader_group._group_actions}` then
`DataLoader(train_set, shuffle=True, **loader_kwargs)`; `prefetch_factor` is popped when there are no workers;
`pin_memory` defaults to `torch.cuda.is_available()`. The data is one synthetic set cut by `random_split` into
train/val, a validation pass over a second loader (`{**loader_kwargs, "batch_size": 128}`) after every epoch.
Items: 3x32x32 images jittered and blurred in numpy (~4 ms an item). Default `--num-workers 0`.

A correct report: the loop is fit()'s `for x, y in train_loader:`; each of the 4 epochs keeps 38 batches (1200 of
1500 items, batch 32); the edit is `--num-workers N` (the dict spread has no num_workers= of its own to edit).
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, random_split


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    loader_group = p.add_argument_group("dataloader")
    loader_group.add_argument("--batch-size", dest="batch_size", type=int, default=32)
    loader_group.add_argument("--num-workers", dest="num_workers", type=int, default=0)
    loader_group.add_argument("--prefetch-factor", dest="prefetch_factor", type=int, default=2)
    loader_group.add_argument("--pin-memory", dest="pin_memory", action="store_true",
                              default=torch.cuda.is_available())
    args = p.parse_args()
    loader_kwargs = {a.dest: getattr(args, a.dest) for a in loader_group._group_actions}
    if loader_kwargs["num_workers"] == 0:
        loader_kwargs.pop("prefetch_factor")
    return args, loader_kwargs


class Blobs(Dataset):
    def __init__(self, n=1500):
        g = np.random.default_rng(1)
        self.centers = g.uniform(6, 26, size=(n, 2))
        self.labels = g.integers(0, 4, size=n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        yy, xx = np.mgrid[0:32, 0:32]
        cy, cx = self.centers[i] + np.random.uniform(-2, 2, size=2)
        r = 3 + 2 * self.labels[i]
        img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
        img = np.stack([img, img ** 2, np.sqrt(img)]) + 0.2 * np.random.randn(3, 32, 32)
        for _ in range(3):
            img = (img + np.roll(img, 1, 1) + np.roll(img, 1, 2)) / 3
        time.sleep(0.003)
        return torch.tensor(img, dtype=torch.float32), int(self.labels[i])


def fit(model, train_loader, val_loader, opt, epochs):
    for epoch in range(epochs):
        model.train()
        tot, n, t0 = 0.0, 0, time.perf_counter()
        for x, y in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            tot += loss.item() * len(y)
            n += len(y)
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        print(f"epoch {epoch} loss {tot / n:.4f} val_acc {correct / len(val_loader.dataset):.3f} "
              f"({time.perf_counter() - t0:.1f}s)")


def main():
    args, loader_kwargs = parse()
    torch.manual_seed(0)
    train_set, val_set = random_split(Blobs(), [1200, 300], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, shuffle=True, **loader_kwargs)
    val_loader = DataLoader(val_set, **{**loader_kwargs, "batch_size": 128})
    print(f"loader: {loader_kwargs}, {len(train_loader)} batches/epoch")
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    fit(model, train_loader, val_loader, opt, args.epochs)


if __name__ == "__main__":
    main()
