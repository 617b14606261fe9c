"""INI-configured training (configparser, as older lab code and many Windows-era tools do): the defaults are an INI
text in the script (`DEFAULT_INI`, read with `cfg.read_string`), optionally overlaid by a file named in $TRAIN_INI;
the values are read with `cfg.getint("loader", "num_workers")` etc. into a `typing.NamedTuple` config; the training
step is an object whose `__call__(x, y)` does forward, backward and step. Data: bag-of-hashed-trigram vectors
from synthetic sentences, built in pure Python per item (~3 ms an item); a 2-layer MLP. Default num_workers = 1.

A correct report: the loop is run()'s `for i, (x, y) in enumerate(loader):`; each of the 5 epochs keeps 72 batches;
the edit is the INI text's `num_workers = 1` line (or a $TRAIN_INI file with [loader] num_workers = N).
"""
import configparser
import os
import random
import time
import zlib
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

DEFAULT_INI = """
[loader]
batch_size = 32
num_workers = 1
shuffle = yes

[train]
epochs = 5
lr = 0.01
seed = 0
"""


class Config(NamedTuple):
    batch_size: int
    num_workers: int
    shuffle: bool
    epochs: int
    lr: float
    seed: int


def load_config():
    cfg = configparser.ConfigParser()
    cfg.read_string(DEFAULT_INI)
    if os.environ.get("TRAIN_INI"):
        cfg.read(os.environ["TRAIN_INI"])
    return Config(batch_size=cfg.getint("loader", "batch_size"), num_workers=cfg.getint("loader", "num_workers"),
                  shuffle=cfg.getboolean("loader", "shuffle"), epochs=cfg.getint("train", "epochs"),
                  lr=cfg.getfloat("train", "lr"), seed=cfg.getint("train", "seed"))


WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta"]
DIM = 512


class Sentences(Dataset):
    def __init__(self, n=2304, seed=0):
        r = random.Random(seed)
        self.items = []
        for _ in range(n):
            label = r.randrange(2)
            words = [r.choice(WORDS[:6] if label else WORDS[4:]) for _ in range(150)]
            self.items.append((" ".join(words), label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        text, label = self.items[i]
        v = [0.0] * DIM
        for _ in range(5):
            for j in range(len(text) - 2):
                v[zlib.crc32(text[j:j + 3].encode()) % DIM] += 1.0
        return torch.tensor(v) / 5.0, label


class TrainStep:
    def __init__(self, model, lr):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    def __call__(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(torch.log1p(x)), y)
        loss.backward()
        self.opt.step()
        return loss.item()


def run(cfg):
    torch.manual_seed(cfg.seed)
    loader = DataLoader(Sentences(seed=cfg.seed), batch_size=cfg.batch_size, shuffle=cfg.shuffle,
                        num_workers=cfg.num_workers, persistent_workers=cfg.num_workers > 0)
    model = nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, 2))
    step = TrainStep(model, cfg.lr)
    print(cfg)
    for epoch in range(cfg.epochs):
        t0, losses = time.perf_counter(), []
        for i, (x, y) in enumerate(loader):
            losses.append(step(x, y))
        print(f"epoch {epoch}: {len(losses)} batches, loss {sum(losses) / len(losses):.4f} "
              f"({time.perf_counter() - t0:.1f}s)")


if __name__ == "__main__":
    run(load_config())
