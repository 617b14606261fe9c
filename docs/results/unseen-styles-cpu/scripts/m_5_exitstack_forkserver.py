"""Resources managed by a contextlib.ExitStack (a TemporaryDirectory for per-epoch torch.save checkpoints, a metrics file), the loader's options in a kwargs dict with multiprocessing_context="forkserver" and prefetch_factor, and a worker_init_fn that calls torch.set_num_threads(1) and torch.manual_seed per worker."""
import argparse
import contextlib
import functools
import json
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def seed_worker(worker_id, base_seed):
    torch.set_num_threads(1)
    torch.manual_seed(base_seed + worker_id)
    np.random.seed((base_seed + worker_id) % 2**32)


class Textures(Dataset):
    """16x16 greyscale textures (a sum of class-specific sinusoids) with a random crop-and-flip augmentation that
    draws from torch's per-worker generator."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed
        self.freqs = np.random.default_rng(seed).uniform(0.3, 2.0, size=(5, 3, 2))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 31337 + i)
        label = i % 5
        yy, xx = np.mgrid[0:20, 0:20].astype(np.float32)
        img = np.zeros((20, 20), np.float32)
        for fx, fy in self.freqs[label]:
            img += np.sin(fx * xx + fy * yy + rng.uniform(0, 6.28))
        img += rng.normal(0, 0.5, size=img.shape).astype(np.float32)
        for _ in range(4):
            img = 0.5 * img + 0.125 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        t = torch.from_numpy(img)
        r, c = torch.randint(0, 5, (2,)).tolist()  # augmentation from the worker's torch generator
        t = t[r:r + 16, c:c + 16]
        if torch.rand(()) < 0.5:
            t = t.flip(1)
        time.sleep(0.001)
        return t.unsqueeze(0).contiguous(), label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(256, 5)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    loader_kwargs = {"batch_size": args.batch_size, "shuffle": True, "num_workers": args.workers}
    if args.workers > 0:
        loader_kwargs.update(multiprocessing_context="forkserver", prefetch_factor=args.prefetch,
                             persistent_workers=True,
                             worker_init_fn=functools.partial(seed_worker, base_seed=args.seed))

    with contextlib.ExitStack() as stack:
        ckpt_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="m5_ckpt_"))
        metrics = stack.enter_context(open(os.path.join(ckpt_dir, "metrics.jsonl"), "w"))
        train_loader = DataLoader(Textures(3200, seed=3), **loader_kwargs)
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
        stack.callback(print, "cleaning up", ckpt_dir, flush=True)
        for epoch in range(args.epochs):
            model.train()
            total, batches = 0.0, 0
            for x, y in train_loader:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += loss.item()
                batches += 1
            sched.step()
            path = os.path.join(ckpt_dir, f"epoch{epoch:03d}.pt")
            torch.save({"epoch": epoch, "model": model.state_dict(), "opt": opt.state_dict()}, path)
            metrics.write(json.dumps({"epoch": epoch, "loss": total / batches}) + "\n")
            print(f"epoch {epoch} batches {batches} loss {total / batches:.4f} saved {os.path.basename(path)}",
                  flush=True)


if __name__ == "__main__":
    main()
