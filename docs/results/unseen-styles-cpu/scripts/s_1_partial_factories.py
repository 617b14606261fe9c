"""Loader factories: a module-level dict of functools.partial(DataLoader, ...) with num_workers baked into the
"train" partial; the epoch loop is `while epoch < max_epochs:`. Correct edit: the "train" partial's num_workers."""
import functools
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n=768, d=32):
        g = np.random.default_rng(0)
        self.x = g.standard_normal((n, d)).astype(np.float32)
        self.y = (self.x[:, :4].sum(1) > 0).astype(np.int64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        v = self.x[i]
        for _ in range(25):
            v = np.tanh(v * 1.01 + 0.001)
        time.sleep(0.0005)
        return torch.from_numpy(v.copy()), int(self.y[i])


LOADER_FACTORIES = {
    "train": functools.partial(DataLoader, batch_size=32, shuffle=True, num_workers=0, drop_last=True),
    "eval": functools.partial(DataLoader, batch_size=128, shuffle=False, num_workers=0),
}


def build_model():
    return nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))


def run():
    torch.manual_seed(0)
    train_loader = LOADER_FACTORIES["train"](Noisy())
    eval_loader = LOADER_FACTORIES["eval"](Noisy(n=256))
    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    epoch, max_epochs = 0, 3
    while epoch < max_epochs:
        model.train()
        total, nb = 0.0, 0
        for xb, yb in train_loader:
            loss = crit(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            nb += 1
        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in eval_loader:
                correct += (model(xb).argmax(1) == yb).sum().item()
        print(f"epoch {epoch} batches {nb} loss {total / nb:.4f} acc {correct / 256:.3f}")
        epoch += 1


if __name__ == "__main__":
    run()
