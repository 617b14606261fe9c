"""Hydra-like nested config without Hydra/OmegaConf: a `types.SimpleNamespace` tree built by a `get_config()`
function (`cfg.data.loader.workers = 2`, `cfg.data.loader.prefetch = 4`, `cfg.optim.lr`, ...), overridable only
through dotted `key=value` strings in sys.argv (`data.loader.workers=3`) applied by a small `apply_overrides()`
helper. The loader already has `persistent_workers=True`, `prefetch_factor=cfg.data.loader.prefetch`, a
`worker_init_fn` that seeds numpy per worker (`np.random.seed(torch.initial_seed() % 2**32)`), and a
`Subset`-of-`ConcatDataset` train split. Random crop+flip augmentation in numpy per item.

A correct report: the loop is Trainer-free `train_one(cfg, model, loader, opt, epoch)`'s `for images, labels in
loader:`; 4 epochs of 28 batches (896 of 1024 items, batch 32); the count comes from `cfg.data.loader.workers = 2`
in get_config() (edit that line, or pass `data.loader.workers=N` as an argument - no `--`); with persistent workers
the worker start-up is paid once, not per epoch.
"""
import sys
import time
from types import SimpleNamespace as NS

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset


def get_config():
    return NS(
        seed=3,
        epochs=4,
        data=NS(n_per_part=512, crop=24,
                loader=NS(batch_size=32, workers=2, prefetch=4, persistent=True)),
        optim=NS(lr=2e-3, weight_decay=1e-4),
    )


def apply_overrides(cfg, overrides):
    for item in overrides:
        key, value = item.split("=", 1)
        *path, leaf = key.split(".")
        node = cfg
        for p in path:
            node = getattr(node, p)
        old = getattr(node, leaf)
        setattr(node, leaf, type(old)(value) if not isinstance(old, bool) else value.lower() in ("1", "true"))
    return cfg


class Textures(Dataset):
    def __init__(self, n, freq, crop, seed):
        self.n, self.freq, self.crop = n, freq, crop
        self.labels = np.random.default_rng(seed).integers(0, 5, n)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        y = int(self.labels[i])
        yy, xx = np.mgrid[0:32, 0:32]
        img = np.sin(self.freq * (y + 1) * xx / 8.0 + np.cos(yy * (y + 1) / 6.0))
        img = np.stack([img, np.roll(img, y, 0), img * img]) + 0.3 * np.random.randn(3, 32, 32)
        r, c = np.random.randint(0, 32 - self.crop + 1, size=2)
        img = img[:, r:r + self.crop, c:c + self.crop]
        if np.random.rand() < 0.5:
            img = img[:, :, ::-1]
        time.sleep(0.003)
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), y


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)


def build_loader(cfg):
    d = cfg.data
    full = ConcatDataset([Textures(d.n_per_part, 1.0, d.crop, 0), Textures(d.n_per_part, 1.5, d.crop, 1)])
    idx = np.random.default_rng(cfg.seed).permutation(len(full))
    train_set = Subset(full, idx[:896].tolist())
    lc = d.loader
    g = torch.Generator()
    g.manual_seed(cfg.seed)
    return DataLoader(train_set, batch_size=lc.batch_size, shuffle=True, num_workers=lc.workers,
                      prefetch_factor=lc.prefetch if lc.workers > 0 else None,
                      persistent_workers=lc.persistent and lc.workers > 0,
                      worker_init_fn=seed_worker, generator=g, pin_memory=torch.cuda.is_available())


def train_one(cfg, model, loader, opt, epoch):
    model.train()
    total, n = 0.0, 0
    for images, labels in loader:
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        n += 1
    return total / n, n


def main():
    cfg = apply_overrides(get_config(), sys.argv[1:])
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)
    loader = build_loader(cfg)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    for epoch in range(cfg.epochs):
        t0 = time.time()
        loss, n = train_one(cfg, model, loader, opt, epoch)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} workers {loader.num_workers} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
