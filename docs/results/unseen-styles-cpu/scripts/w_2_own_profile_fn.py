"""Hand-rolled timing style (common in Kaggle kernels and small repos): the script defines its OWN
`@contextmanager def profile(name)` that accumulates wall time per phase in a `TIMINGS` dict, and wraps the
forward/backward in `with profile("fwd_bwd"):`. The worker count comes from an environment variable,
`int(os.environ.get("NUM_WORKERS", 1))`; `torch.compile` sits behind `USE_COMPILE = False` and stays off.
Loop: `for i, batch in enumerate(train_loader)` in train_epoch(); prints the TIMINGS dict at the end.

A correct report: the loop is train_epoch()'s `for i, batch in enumerate(train_loader)`; 3 epochs of 36 batches
(1152 items, batch 32); the count is the env var NUM_WORKERS (default 1): the edit is `NUM_WORKERS=N python ...`
(or the default in the os.environ.get call). The user's own `profile` must keep working: the profiler injects a
`profile` builtin, but the module-level def shadows it, so the script must run and time itself exactly as plain.
"""
import os
import time
from collections import defaultdict
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

TIMINGS = defaultdict(float)
USE_COMPILE = False


@contextmanager
def profile(name):
    t = time.perf_counter()
    yield
    TIMINGS[name] += time.perf_counter() - t


class Patches(Dataset):
    def __init__(self, n=1152):
        self.y = np.random.default_rng(1).integers(0, 5, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(1000 + i)
        y = int(self.y[i])
        img = g.standard_normal((3, 24, 24)).astype(np.float32)
        img[:, y * 4:y * 4 + 4, :] += 2.0
        img = np.clip(img, -2, 2) * np.float32(0.5)
        time.sleep(0.003)
        return torch.from_numpy(img), y


def train_epoch(model, train_loader, opt):
    model.train()
    tot, n = 0.0, 0
    for i, batch in enumerate(train_loader):
        x, y = batch
        with profile("fwd_bwd"):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        tot += loss.item()
        n += 1
    return tot / n, n


def main():
    torch.manual_seed(0)
    num_workers = int(os.environ.get("NUM_WORKERS", 1))
    train_loader = DataLoader(Patches(), batch_size=32, shuffle=True, num_workers=num_workers)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 5))
    if USE_COMPILE:
        model = torch.compile(model)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        t0 = time.time()
        with profile("epoch"):
            loss, n = train_epoch(model, train_loader, opt)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} workers {train_loader.num_workers} ({time.time() - t0:.1f}s)")
    print("timings:", {k: round(v, 2) for k, v in TIMINGS.items()})


if __name__ == "__main__":
    main()
