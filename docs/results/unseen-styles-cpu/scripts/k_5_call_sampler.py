"""A callable trainer (the epoch loop lives in `Trainer.__call__`), a custom `Sampler` subclass that balances an
imbalanced dataset class by class, and options parsed by hand from sys.argv (`--key value` pairs over a dict of
defaults, no argparse), as small research scripts often do."""
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Sampler

DEFAULTS = {"epochs": 3, "batch_size": 48, "workers": 1, "lr": 0.003, "n": 6000, "seed": 7}


def parse_argv(argv):
    cfg = dict(DEFAULTS)
    it = iter(argv)
    for key in it:
        if not key.startswith("--"):
            raise SystemExit(f"unexpected argument {key!r}")
        name = key[2:].replace("-", "_")
        if name not in cfg:
            raise SystemExit(f"unknown option {key}; known: {', '.join('--' + k for k in cfg)}")
        cfg[name] = type(DEFAULTS[name])(next(it))
    return cfg


class Trajectories(Dataset):
    """Random-walk trajectories of 5 classes (different drift/volatility), heavily imbalanced (class 0 is 60%).
    Each item integrates its walk and computes rolling statistics in numpy."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.choice(5, size=n, p=[0.6, 0.2, 0.1, 0.06, 0.04])
        self.seeds = rng.integers(0, 2**31, size=n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        c = int(self.labels[i])
        rng = np.random.default_rng(int(self.seeds[i]))
        steps = rng.normal(0.02 * (c - 2), 0.5 + 0.15 * c, size=4096)
        path = np.cumsum(steps)
        feats = []
        for w in (4, 8, 16, 32, 64, 128, 256, 512, 1024):
            kernel = np.ones(w) / w
            ma = np.convolve(path, kernel, mode="valid")
            feats.append([ma.std(), np.abs(np.diff(ma)).mean(), (path[w:] - path[:-w]).std()])
        x = np.log1p(np.abs(np.asarray(feats, dtype=np.float32).ravel()))
        return torch.from_numpy(x), c


class ClassBalancedSampler(Sampler):
    """Yields indices so that every class is drawn equally often; one 'epoch' is len(dataset) indices."""

    def __init__(self, labels, seed=0):
        self.by_class = [np.flatnonzero(labels == c) for c in np.unique(labels)]
        self.n = len(labels)
        self.epoch = 0
        self.seed = seed

    def __len__(self):
        return self.n

    def __iter__(self):
        rng = np.random.default_rng(self.seed + self.epoch)
        self.epoch += 1
        per_class = self.n // len(self.by_class)
        picks = [rng.choice(idx, size=per_class, replace=len(idx) < per_class) for idx in self.by_class]
        order = np.concatenate(picks)
        rng.shuffle(order)
        return iter(order.tolist())


class Trainer:
    def __init__(self, model, loader, lr):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)
        self.loss_fn = nn.CrossEntropyLoss()

    def __call__(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            t0, total, seen, nb = time.perf_counter(), 0.0, 0, 0
            for x, y in self.loader:
                out = self.model(x)
                loss = self.loss_fn(out, y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                total += loss.item() * len(y)
                seen += len(y)
                nb += 1
            print(f"[epoch {epoch + 1}/{epochs}] loss {total / seen:.4f} batches {nb} "
                  f"({time.perf_counter() - t0:.1f}s)", flush=True)
        return self.model


def main():
    cfg = parse_argv(sys.argv[1:])
    print("config:", cfg)
    torch.manual_seed(cfg["seed"])
    ds = Trajectories(cfg["n"], cfg["seed"])
    loader = DataLoader(ds, batch_size=cfg["batch_size"], sampler=ClassBalancedSampler(ds.labels, cfg["seed"]),
                        num_workers=cfg["workers"], drop_last=True)
    model = nn.Sequential(nn.Linear(27, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 5))
    trainer = Trainer(model, loader, cfg["lr"])
    trainer(cfg["epochs"])


if __name__ == "__main__":
    main()
