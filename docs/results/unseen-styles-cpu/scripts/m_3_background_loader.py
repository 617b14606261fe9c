"""The prefetch_generator idiom: `class DataLoaderX(DataLoader): def __iter__(self): return BackgroundGenerator(super().__iter__())`, a thread that pulls batches from the DataLoader's iterator into a queue ahead of the loop."""
import argparse
import queue
import threading
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class BackgroundGenerator(threading.Thread):
    """As in the prefetch_generator package: iterate `generator` in a daemon thread, `max_prefetch` items ahead."""

    def __init__(self, generator, max_prefetch=6):
        super().__init__(daemon=True)
        self.queue = queue.Queue(max_prefetch)
        self.generator = generator
        self.start()

    def run(self):
        for item in self.generator:
            self.queue.put(item)
        self.queue.put(None)

    def __next__(self):
        item = self.queue.get()
        if item is None:
            raise StopIteration
        return item

    def __iter__(self):
        return self


class DataLoaderX(DataLoader):
    def __iter__(self):
        return BackgroundGenerator(super().__iter__())


class Patches(Dataset):
    """RGB 20x20 patches of oriented stripes (the class is the orientation), contrast-normalised per item."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 104729 + i)
        label = int(rng.integers(8))
        theta = label * np.pi / 8 + rng.normal(0, 0.08)
        yy, xx = np.mgrid[0:20, 0:20].astype(np.float32)
        phase = rng.uniform(0, 2 * np.pi)
        base = np.sin(0.9 * (xx * np.cos(theta) + yy * np.sin(theta)) + phase)
        img = np.stack([base * rng.uniform(0.6, 1.4) for _ in range(3)])
        img += rng.normal(0, 0.4, size=img.shape)
        for _ in range(3):  # a cheap blur, three passes
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2)) / 3
        img = (img - img.mean(axis=(1, 2), keepdims=True)) / (img.std(axis=(1, 2), keepdims=True) + 1e-5)
        time.sleep(0.0015)
        return torch.from_numpy(img.astype(np.float32)), label


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(24, 48, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(48 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 8))


def train(args):
    torch.manual_seed(args.seed)
    train_loader = DataLoaderX(Patches(3072, seed=1), batch_size=args.batch_size, shuffle=True,
                               num_workers=args.num_workers, drop_last=True)
    model = build_model()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        running, n = 0.0, 0
        for images, labels in train_loader:
            logits = model(images)
            loss = F.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss.item()
            n += 1
        print(f"Epoch {epoch}/{args.epochs}: {n} batches, loss {running / n:.4f}, {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    train(parser.parse_args())
