"""A nested-dict config turned into `types.SimpleNamespace` recursively; `DataLoader(..., num_workers=cfg.data.workers)`;
the loop runs over a hand-written tqdm-like `Progress(loader)` whose `__iter__` yields each batch and prints a bar.
Correct edit: the dict literal's `"workers": 0` line (nothing else sets it)."""
import sys
import time
import types

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

CONFIG = {
    "data": {
        "size": 640,
        "batch_size": 32,
        "workers": 0,
    },
    "optim": {"lr": 0.02, "momentum": 0.9},
    "train": {"epochs": 3},
}


def to_ns(d):
    return types.SimpleNamespace(**{k: to_ns(v) if isinstance(v, dict) else v for k, v in d.items()})


class Progress:
    def __init__(self, iterable, desc=""):
        self.iterable, self.desc = iterable, desc
        self.total = len(iterable)

    def __iter__(self):
        t0 = time.time()
        for i, item in enumerate(self.iterable, 1):
            yield item
            if i % 5 == 0 or i == self.total:
                bar = "#" * (20 * i // self.total)
                sys.stdout.write(f"\r{self.desc} |{bar:<20}| {i}/{self.total} {time.time() - t0:.1f}s")
                sys.stdout.flush()
        sys.stdout.write("\n")


class Blobs(Dataset):
    def __init__(self, n):
        g = np.random.default_rng(4)
        self.c = g.integers(0, 3, size=n)
        self.x = (g.standard_normal((n, 24)) + self.c[:, None]).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        m = np.linalg.svd(np.outer(x, x[::-1]) + np.eye(24, dtype=np.float32), compute_uv=False)  # per-item cost
        time.sleep(0.0004)
        return torch.from_numpy(x + 1e-3 * m[:24]), int(self.c[i])


def main():
    cfg = to_ns(CONFIG)
    torch.manual_seed(0)
    loader = DataLoader(Blobs(cfg.data.size), batch_size=cfg.data.batch_size, shuffle=True,
                        num_workers=cfg.data.workers)
    net = nn.Sequential(nn.Linear(24, 96), nn.ReLU(), nn.Linear(96, 3))
    opt = torch.optim.SGD(net.parameters(), lr=cfg.optim.lr, momentum=cfg.optim.momentum)
    for epoch in range(cfg.train.epochs):
        seen, loss_sum = 0, 0.0
        for xb, yb in Progress(loader, desc=f"epoch {epoch}"):
            logits = net(xb)
            loss = nn.functional.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            seen += 1
        print(f"epoch {epoch}: batches={seen} loss={loss_sum / seen:.4f}")


if __name__ == "__main__":
    main()
