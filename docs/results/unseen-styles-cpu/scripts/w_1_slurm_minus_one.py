"""HPC-cluster style (common in university lab repos): the worker count is derived from Slurm's allocation,
`NUM_WORKERS = int(os.environ.get("SLURM_CPUS_PER_TASK", "2")) - 1` ("leave one core for the main process"),
and the loader uses `sampler=DistributedSampler(ds, num_replicas=1, rank=0)` (kept from a multi-GPU version) with
`sampler.set_epoch(epoch)` at the top of every epoch. Loop: `for step, (x, y) in enumerate(loader)` in main().

A correct report: the loop is main()'s `for step, (x, y) in enumerate(loader)`; 3 epochs of 40 batches (1280 items,
batch 32, the sampler keeps all of them with one replica); outside Slurm the count is 2 - 1 = 1. The edit is the
environment variable: to get N workers set SLURM_CPUS_PER_TASK=N+1 (or `#SBATCH --cpus-per-task=N+1`), because the
script subtracts one; advising `SLURM_CPUS_PER_TASK=N` would yield N-1 workers.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

NUM_WORKERS = int(os.environ.get("SLURM_CPUS_PER_TASK", "2")) - 1
EPOCHS = 3
BATCH = 32


class Spectra(Dataset):
    def __init__(self, n=1280):
        self.y = np.random.default_rng(0).integers(0, 4, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = int(self.y[i])
        t = np.linspace(0, 1, 256, dtype=np.float32)
        x = np.sin(2 * np.pi * (y + 1) * 3 * t) + 0.5 * g.standard_normal(256).astype(np.float32)
        x = np.abs(np.fft.rfft(x))[:128].astype(np.float32)
        time.sleep(0.003)
        return torch.from_numpy(x / (x.max() + 1e-6)), y


def main():
    torch.manual_seed(0)
    ds = Spectra()
    sampler = DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=NUM_WORKERS)
    model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    print(f"workers={NUM_WORKERS} (SLURM_CPUS_PER_TASK={os.environ.get('SLURM_CPUS_PER_TASK')})")
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        model.train()
        tot, n, t0 = 0.0, 0, time.time()
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            n += 1
        print(f"epoch {epoch} loss {tot / n:.4f} batches {n} workers {loader.num_workers} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
