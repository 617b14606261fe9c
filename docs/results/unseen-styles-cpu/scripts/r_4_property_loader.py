"""An `Experiment` class in the style of small research codebases: module-level `HPARAMS` dict (overridable from the
command line as `key=value` pairs), the DataLoader exposed as a read-only `@property` (`self.train_loader`) that
builds a new DataLoader on every access, a `steps_per_epoch` property that calls `len(self.train_loader)` to size a
per-batch cosine schedule, and `fit()` looping `for batch_idx, (x, y) in enumerate(self.train_loader)`. Nothing in
the loop shows that each epoch gets a fresh loader (and fresh workers): the property hides it.

Data: 1x32x32 digit-like blobs, shifted and blurred in numpy per item (about 1 ms an item); a small CNN. Default
num_workers 2 (on 2 CPUs). A correct report: the loop is fit()'s; each of the 4 epochs keeps 47 batches; the
worker count is set in HPARAMS (`"num_workers": 2,`) or as `num_workers=N` on the command line; and it should say
that the property builds a DataLoader each time it is read.
"""
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

HPARAMS = {
    "num_workers": 2,
    "batch_size": 64,
    "epochs": 4,
    "lr": 0.05,
    "seed": 0,
}


class Blobs(Dataset):
    def __init__(self, n=3000, seed=0):
        g = np.random.default_rng(seed)
        self.labels = g.integers(0, 10, n)
        self.centres = g.uniform(8, 24, (10, 2))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        cy, cx = self.centres[self.labels[i]] + r.normal(0, 1.5, 2)
        yy, xx = np.mgrid[0:32, 0:32]
        img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 18.0) + 0.3 * r.standard_normal((32, 32))
        for _ in range(25):  # a cheap blur, repeated: the per-item CPU cost
            img = (img + np.roll(img, 1, 0) + np.roll(img, 1, 1)) / 3.0
        return torch.from_numpy(img[None].astype(np.float32)), int(self.labels[i])


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class Experiment:
    def __init__(self, hparams):
        self.hparams = dict(hparams)
        torch.manual_seed(self.hparams["seed"])
        self.train_set = Blobs(seed=self.hparams["seed"])
        self.model = SmallCNN()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.hparams["lr"], momentum=0.9)

    @property
    def train_loader(self):
        return DataLoader(self.train_set, batch_size=self.hparams["batch_size"], shuffle=True,
                          num_workers=self.hparams["num_workers"])

    @property
    def steps_per_epoch(self):
        return len(self.train_loader)

    def fit(self):
        total_steps = self.hparams["epochs"] * self.steps_per_epoch
        schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total_steps) / total_steps)))
        for epoch in range(self.hparams["epochs"]):
            self.model.train()
            t0, running, n = time.time(), 0.0, 0
            for batch_idx, (x, y) in enumerate(self.train_loader):
                self.optimizer.zero_grad()
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                schedule.step()
                running += loss.item()
                n += 1
            print(f"epoch {epoch}: {n} batches, loss {running / n:.4f}, {time.time() - t0:.1f}s", flush=True)


def parse_overrides(argv, hparams):
    for item in argv:  # key=value, typed by the default's type
        key, _, value = item.partition("=")
        if key not in hparams:
            raise SystemExit(f"unknown hparam {key!r}; known: {', '.join(hparams)}")
        hparams[key] = type(hparams[key])(value)
    return hparams


if __name__ == "__main__":
    Experiment(parse_overrides(sys.argv[1:], dict(HPARAMS))).fit()
