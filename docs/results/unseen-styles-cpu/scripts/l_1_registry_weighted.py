"""Registry style (mmcv/fairseq-like): loaders built by factories a decorator registers in a dict, chosen by a config's "type"; a WeightedRandomSampler drawing num_samples < len(dataset) with replacement; logging to stderr; train accuracy re-read over the training loader every epoch."""
import argparse
import copy
import logging
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, WeightedRandomSampler

log = logging.getLogger("l1")

DATASETS = {}
LOADERS = {}


def register(table, name):
    def deco(fn):
        table[name] = fn
        return fn
    return deco


CONFIG = {
    "seed": 3,
    "epochs": 8,
    "data": {"type": "spectra", "n": 6000, "classes": 4},
    "train_loader": {"type": "weighted", "batch_size": 32, "num_workers": 2, "num_samples": 4000},
    "val_loader": {"type": "sequential", "batch_size": 128, "num_workers": 0},
    "optim": {"lr": 2e-3, "weight_decay": 1e-4},
}


class Spectra(Dataset):
    """Noisy spectra of 4 imbalanced classes; each item is smoothed and whitened in numpy (deterministic per index)."""

    def __init__(self, n, classes, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.choice(classes, size=n, p=[0.7, 0.15, 0.1, 0.05][:classes])
        self.seeds = rng.integers(0, 2**31, size=n)
        self.freqs = np.linspace(1.0, 1.3, classes)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        c = int(self.labels[i])
        rng = np.random.default_rng(int(self.seeds[i]))
        t = np.linspace(0, 1, 4096)
        sig = np.sin(2 * np.pi * self.freqs[c] * 8 * t + rng.uniform(0, 6.28)) + rng.normal(0, 6.0, size=t.size)
        for w in (5, 9, 17, 33, 65):  # a little smoothing, the deliberately slow part
            sig = np.convolve(sig, np.ones(w) / w, mode="same")
        spec = np.abs(np.fft.rfft(sig))[:64]
        spec = (spec - spec.mean()) / (spec.std() + 1e-6)
        return torch.from_numpy(spec.astype(np.float32)), c


@register(DATASETS, "spectra")
def build_spectra(n, classes, seed):
    return Spectra(n, classes, seed)


@register(LOADERS, "weighted")
def build_weighted_loader(dataset, batch_size, num_workers, num_samples, seed):
    counts = np.bincount(dataset.labels)
    weights = torch.as_tensor(1.0 / counts[dataset.labels], dtype=torch.double)
    sampler = WeightedRandomSampler(weights, num_samples=num_samples, replacement=True,
                                    generator=torch.Generator().manual_seed(seed))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers)


@register(LOADERS, "sequential")
def build_sequential_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers)


def build(table, cfg, *args, **extra):
    cfg = copy.deepcopy(cfg)
    kind = cfg.pop("type")
    return table[kind](*args, **cfg, **extra)


@torch.no_grad()
def accuracy(model, loader):
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
        total += y.numel()
    model.train()
    return correct / total


def train_one_epoch(model, loader, optimizer, criterion, epoch):
    model.train()
    running, batches = 0.0, 0
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.item()
        batches += 1
        if step % 25 == 0:
            log.debug("epoch %d step %d loss %.4f", epoch, step, loss.item())
    return running / batches, batches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=CONFIG["epochs"])
    parser.add_argument("--workers", type=int, default=CONFIG["train_loader"]["num_workers"])
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args()
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    cfg = copy.deepcopy(CONFIG)
    cfg["train_loader"]["num_workers"] = args.workers
    torch.manual_seed(cfg["seed"])
    dataset = build(DATASETS, cfg["data"], seed=cfg["seed"])
    val_set = build(DATASETS, dict(cfg["data"], n=1000), seed=cfg["seed"] + 1)
    train_loader = build(LOADERS, cfg["train_loader"], dataset, seed=cfg["seed"])
    val_loader = build(LOADERS, cfg["val_loader"], val_set, seed=cfg["seed"])
    log.info("train loader: %d batches of %d, %d workers", len(train_loader), train_loader.batch_size,
             train_loader.num_workers)

    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 4))
    optimizer = torch.optim.AdamW(model.parameters(), **cfg["optim"])
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        loss, batches = train_one_epoch(model, train_loader, optimizer, criterion, epoch)
        train_acc = accuracy(model, train_loader)
        val_acc = accuracy(model, val_loader)
        log.info("epoch %d: loss %.4f batches %d train_acc %.3f val_acc %.3f (%.1fs)", epoch, loss, batches,
                 train_acc, val_acc, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
