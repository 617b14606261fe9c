"""Curriculum learning through the Dataset: train_set.set_epoch(epoch) before each epoch (as WebDataset/HF-style datasets do) makes items noisier as training goes on; the loader is deliberately not persistent, so each epoch's fresh workers see the new epoch."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class CurriculumShapes(Dataset):
    """16x16 images of 3 shapes; the noise (and so the difficulty) grows with the epoch the dataset was told."""

    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 3, size=n)
        self.seeds = rng.integers(0, 2**31, size=n)
        self.epoch = 0
        yy, xx = np.mgrid[:16, :16]
        self.templates = np.stack([
            ((yy - 8) ** 2 + (xx - 8) ** 2 < 25).astype(np.float32),          # disc
            ((abs(yy - 8) < 5) & (abs(xx - 8) < 5)).astype(np.float32),        # square
            ((abs(yy - 8) < 2) | (abs(xx - 8) < 2)).astype(np.float32),        # cross
        ])

    def set_epoch(self, epoch):
        self.epoch = epoch

    def difficulty(self):
        return min(1.0, 0.3 + 0.2 * self.epoch)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        rng = np.random.default_rng(int(self.seeds[i]) + 1000003 * self.epoch)
        img = self.templates[self.labels[i]].copy()
        img = np.roll(img, rng.integers(-3, 4, size=2), axis=(0, 1))
        noise = rng.normal(0, 1.0, size=(16, 16))
        for _ in range(25):  # a smoothed noise field, the deliberately slow part
            noise = 0.25 * (np.roll(noise, 1, 0) + np.roll(noise, -1, 0) + np.roll(noise, 1, 1) + np.roll(noise, -1, 1))
        img = img + 3.0 * self.difficulty() * noise / (noise.std() + 1e-6) * 0.5
        time.sleep(0.0005)  # reading the item from a slow disk
        return torch.from_numpy(img.astype(np.float32))[None], int(self.labels[i]), self.epoch


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def run_epoch(model, loader, optimizer, epoch):
    model.train()
    total, nb, stale = 0.0, 0, 0
    for images, labels, seen_epoch in loader:
        stale += int((seen_epoch != epoch).sum())
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        nb += 1
    return total / nb, nb, stale


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--n", type=int, default=4000)
    args = p.parse_args()

    torch.manual_seed(0)
    train_set = CurriculumShapes(args.n, seed=1)
    # persistent_workers=False on purpose: a persistent worker keeps its copy of the dataset, and would not see set_epoch
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
                        prefetch_factor=4 if args.num_workers > 0 else None, persistent_workers=False)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        train_set.set_epoch(epoch)
        t0 = time.time()
        loss, nb, stale = run_epoch(model, loader, optimizer, epoch)
        print(f"epoch {epoch} difficulty {train_set.difficulty():.1f}: loss {loss:.4f} batches {nb} "
              f"stale_items {stale} ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
