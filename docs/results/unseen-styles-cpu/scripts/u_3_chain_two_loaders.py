"""Two-source training (domain-mixing / synthetic+real code): one DataLoader per source, each with its own worker
count from a per-source dict `WORKERS = {"synthetic": 0, "rendered": 1}`, and each epoch iterates
`for x, y in itertools.chain(synth_loader, rendered_loader):` -- all synthetic batches, then all rendered ones.
The "rendered" source is the expensive one (~6 ms an item), the synthetic one is cheap.

A correct report: the loop is main()'s `for x, y in itertools.chain(...)`; each of the 3 epochs keeps 20 + 20 = 40
batches; the two loaders have different counts (0 and 1), set in the WORKERS dict (not on the DataLoader lines,
which read `WORKERS[name]`). Advice should say which loader it means.
"""
import argparse
import itertools
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

WORKERS = {"synthetic": 0, "rendered": 1}


class Synthetic(Dataset):
    def __init__(self, n=640):
        g = np.random.default_rng(1)
        self.x = g.standard_normal((n, 64)).astype(np.float32)
        self.y = (self.x[:, :8].sum(1) > 0).astype(np.int64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


class Rendered(Dataset):
    def __init__(self, n=640):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = np.random.default_rng(1000 + i)
        x = g.standard_normal(64).astype(np.float32)
        m = g.standard_normal((64, 64)).astype(np.float32) / 8
        for _ in range(20):
            x = np.tanh(m @ x + x)
        time.sleep(0.005)
        return torch.from_numpy(x), int(x[:8].sum() > 0)


def make_loader(name, ds, batch_size):
    return DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=WORKERS[name])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--bs", type=int, default=32)
    args = ap.parse_args()
    torch.manual_seed(0)
    synth_loader = make_loader("synthetic", Synthetic(), args.bs)
    rendered_loader = make_loader("rendered", Rendered(), args.bs)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        t0, tot, nb = time.time(), 0.0, 0
        for x, y in itertools.chain(synth_loader, rendered_loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            nb += 1
        print(f"epoch {epoch} loss {tot / nb:.4f} batches {nb} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
