"""HPC-binding style (scripts that pin themselves, e.g. "avoid numa thrash"): at start the script calls
`os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})`, binding itself (and so every DataLoader worker it forks)
to ONE core, then wraps the model in `nn.DataParallel` (on CPU it passes straight through to the module). The
worker count is a module constant `WORKERS = 2` passed as `num_workers=WORKERS`. Loop: `for x, y in loader` in
train().

A correct report: the loop is train()'s `for x, y in loader`; 3 epochs of 40 batches (1280 items, batch 32). The
process can use only one core, so extra workers share that one core with the main process: a correct report sees
an affinity of 1 CPU and does not promise speed-ups (or says that the script's own sched_setaffinity must go
first); any --cpus-per-task advice is moot while that line stays. The count edit is `WORKERS = 2`.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
WORKERS = 2


class Noisy(Dataset):
    def __init__(self, n=1280):
        self.y = np.random.default_rng(2).integers(0, 8, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(i + 77)
        y = int(self.y[i])
        x = g.standard_normal((16, 16)).astype(np.float32)
        x[y * 2:y * 2 + 2] += 1.5
        for _ in range(20):
            x = 0.5 * x + 0.25 * (np.roll(x, 1, 0) + np.roll(x, 1, 1))
        time.sleep(0.002)
        return torch.from_numpy(x.ravel()), y


def train(model, loader, opt, epoch):
    model.train()
    tot, n = 0.0, 0
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
        n += 1
    return tot / n, n


def main():
    torch.manual_seed(0)
    print("affinity:", sorted(os.sched_getaffinity(0)))
    loader = DataLoader(Noisy(), batch_size=32, shuffle=True, num_workers=WORKERS)
    model = nn.DataParallel(nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        t0 = time.time()
        loss, n = train(model, loader, opt, epoch)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} workers {loader.num_workers} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
