"""Multi-scale training as YOLO-style repositories do it: a BatchSampler of its own yields lists of (index, size)
pairs, one random size for the whole batch, and the Dataset's __getitem__ takes that pair. The loaders are
functools.cached_property attributes of a Runner, built on first use; the schedule is CosineAnnealingWarmRestarts
stepped with a fractional epoch, `scheduler.step(epoch + i / iters)`, as its docstring shows."""
import argparse
import random
from functools import cached_property

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler, Sampler, SequentialSampler

N_CLASSES = 5


class Textures(Dataset):
    """Class 0-4: horizontal stripes, vertical stripes, checkerboard, dots, diagonal stripes, each with its own
    per-item frequency, phase and noise, rendered at the size the sampler asks for."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, N_CLASSES, n)
        self.freq = rng.uniform(3, 7, n)
        self.phase = rng.uniform(0, 2 * np.pi, n)
        self.seed = seed

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        idx, size = index
        rng = np.random.default_rng(self.seed * 7919 + idx)
        yy, xx = np.mgrid[0:size, 0:size] / size * 2 * np.pi * self.freq[idx] + self.phase[idx]
        label = int(self.labels[idx])
        pattern = [np.sin(yy), np.sin(xx), np.sign(np.sin(yy)) * np.sign(np.sin(xx)),
                   np.sin(yy) * np.sin(xx) > 0.6, np.sin(yy + xx)][label].astype(np.float32)
        img = np.stack([pattern * c for c in rng.uniform(0.5, 1.0, 3)]) + rng.normal(0, 0.4, (3, size, size))
        return torch.from_numpy(img.astype(np.float32)), label


class MultiScaleBatchSampler(Sampler):
    def __init__(self, sampler, batch_size, sizes, drop_last=True, seed=0):
        self.sampler, self.batch_size, self.sizes, self.drop_last = sampler, batch_size, sizes, drop_last
        self.rng = random.Random(seed)

    def __iter__(self):
        batch, size = [], self.rng.choice(self.sizes)
        for idx in self.sampler:
            batch.append((idx, size))
            if len(batch) == self.batch_size:
                yield batch
                batch, size = [], self.rng.choice(self.sizes)
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler) // self.batch_size
        return n if self.drop_last or len(self.sampler) % self.batch_size == 0 else n + 1


def make_net():
    def block(a, b):
        return nn.Sequential(nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.SiLU())
    return nn.Sequential(block(3, 24), nn.MaxPool2d(2), block(24, 48), nn.MaxPool2d(2), block(48, 64),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, N_CLASSES))


class Runner:
    def __init__(self, opt):
        self.opt = opt
        self.model = make_net()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=opt.lr, momentum=0.9, nesterov=True)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(self.optimizer, T_0=2, eta_min=1e-4)

    @cached_property
    def train_loader(self):
        ds = Textures(2400, seed=0)
        batches = MultiScaleBatchSampler(RandomSampler(ds), self.opt.batch_size, sizes=(32, 40, 48, 56), seed=0)
        return DataLoader(ds, batch_sampler=batches, num_workers=self.opt.workers, pin_memory=False)

    @cached_property
    def val_loader(self):
        ds = Textures(400, seed=1)
        batches = MultiScaleBatchSampler(SequentialSampler(ds), 100, sizes=(48,), drop_last=False)
        return DataLoader(ds, batch_sampler=batches, num_workers=0)

    def train_epoch(self, epoch):
        self.model.train()
        iters = len(self.train_loader)
        tot = 0.0
        for i, (imgs, targets) in enumerate(self.train_loader):
            loss = F.cross_entropy(self.model(imgs), targets, label_smoothing=0.1)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.scheduler.step(epoch + i / iters)
            tot += loss.item()
        return tot / iters, iters

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        hits = sum((self.model(x).argmax(1) == y).sum().item() for x, y in self.val_loader)
        return hits / len(self.val_loader.dataset)

    def fit(self):
        for epoch in range(self.opt.epochs):
            loss, iters = self.train_epoch(epoch)
            print(f"epoch {epoch}: {iters} batches, loss {loss:.4f}, val acc {self.evaluate():.3f}, "
                  f"lr {self.optimizer.param_groups[0]['lr']:.5f}", flush=True)


def parse_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="max dataloader workers")
    parser.add_argument("--lr", type=float, default=0.05)
    return parser.parse_args()


if __name__ == "__main__":
    torch.manual_seed(0)
    Runner(parse_opt()).fit()
