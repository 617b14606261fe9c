"""A project-wide DataLoader subclass that fills in "good defaults" (seen in many internal codebases):
`class FastLoader(DataLoader)` with class attribute `DEFAULT_WORKERS = 2` and an `__init__` doing
`kwargs.setdefault("num_workers", self.DEFAULT_WORKERS)`, `persistent_workers` when there are workers,
`pin_memory=torch.cuda.is_available()`; the call site `FastLoader(train_set, batch_size=48, shuffle=True)` names no
worker count. A `--debug` flag sets `FastLoader.DEFAULT_WORKERS = 0`. Dict batches come from a
`torch.utils.data.StackDataset(image=..., target=...)`-like pairing over a Dataset doing numpy work (~4 ms an item).
The loop is a `while` over epochs with `for i, batch in enumerate(loader)`.

A correct report: the loop is main()'s inner `for`; each of the 6 epochs keeps 30 batches; the count comes from
`DEFAULT_WORKERS = 2` (the edit: that line, or `num_workers=N` added to the FastLoader(...) call, which wins over
setdefault). No `num_workers=` exists on the call line to change.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, StackDataset, TensorDataset


class FastLoader(DataLoader):
    DEFAULT_WORKERS = 2

    def __init__(self, dataset, **kwargs):
        kwargs.setdefault("num_workers", self.DEFAULT_WORKERS)
        kwargs.setdefault("pin_memory", torch.cuda.is_available())
        if kwargs["num_workers"] > 0:
            kwargs.setdefault("persistent_workers", True)
            kwargs.setdefault("prefetch_factor", 4)
        super().__init__(dataset, **kwargs)


class Textures(Dataset):
    def __init__(self, n=1440, seed=0):
        self.seeds = np.random.default_rng(seed).integers(0, 2**31, size=n)

    def __len__(self):
        return len(self.seeds)

    def __getitem__(self, i):
        g = np.random.default_rng(self.seeds[i])
        freq = 1 + (i % 3) * 2
        base = np.sin(np.linspace(0, freq * np.pi, 48))[None, :] * np.cos(np.linspace(0, freq * np.pi, 48))[:, None]
        img = base + 0.5 * g.standard_normal((48, 48))
        spec = np.abs(np.fft.fft2(img))
        time.sleep(0.003)
        return torch.from_numpy(np.stack([img, np.log1p(spec)]).astype(np.float32))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--debug", action="store_true", help="load in the main process")
    args = p.parse_args()
    if args.debug:
        FastLoader.DEFAULT_WORKERS = 0
    torch.manual_seed(0)
    images = Textures()
    targets = TensorDataset(torch.arange(len(images)) % 3)
    train_set = StackDataset(image=images, target=targets)
    loader = FastLoader(train_set, batch_size=48, shuffle=True)
    model = nn.Sequential(nn.Conv2d(2, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    print(f"num_workers={loader.num_workers}, {len(loader)} batches/epoch")
    epoch = 0
    while epoch < args.epochs:
        t0, tot, n = time.perf_counter(), 0.0, 0
        for i, batch in enumerate(loader):
            x, (y,) = batch["image"], batch["target"]
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(y)
            n += len(y)
        print(f"epoch {epoch} loss {tot / n:.4f} batches {i + 1} ({time.perf_counter() - t0:.1f}s)")
        epoch += 1


if __name__ == "__main__":
    main()
