"""Reproducible-loader style: drop_last, a seeded torch.Generator, and a worker_init_fn seeding numpy/random
per worker; __getitem__ augments with numpy's global RNG (so a batch depends on which worker builds it)."""
import argparse
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class AugmentedDigits(Dataset):
    """16x16 synthetic glyphs (class = which quadrant is bright), randomly shifted, flipped, noised, rescaled."""

    def __init__(self, n, seed=0):
        rng = np.random.RandomState(seed)
        self.labels = rng.randint(0, 4, size=n)
        self.base = rng.rand(n, 16, 16).astype(np.float32) * 0.3
        for i, c in enumerate(self.labels):
            r, q = divmod(int(c), 2)
            self.base[i, r * 8:(r + 1) * 8, q * 8:(q + 1) * 8] += 0.12

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        img = self.base[idx].copy()
        img = np.roll(img, np.random.randint(-2, 3), axis=0)
        img = np.roll(img, np.random.randint(-2, 3), axis=1)
        if random.random() < 0.5:
            img = img[::-1, :].copy()
            label = [2, 3, 0, 1][self.labels[idx]]
        else:
            label = int(self.labels[idx])
        img = img + np.random.normal(0, 0.8, img.shape).astype(np.float32)
        for _ in range(40):  # elastic-ish jitter, one small random smoothing at a time
            w = np.random.uniform(0.05, 0.15)
            img = (1 - 4 * w) * img + w * (np.roll(img, 1, 0) + np.roll(img, -1, 0)
                                           + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        img = (img - img.mean()) / (img.std() + 1e-6)
        return torch.from_numpy(img.astype(np.float32)).unsqueeze(0), label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def train(model, loader, optimizer, epoch):
    model.train()
    total, batches = 0.0, 0
    for data, target in loader:
        optimizer.zero_grad()
        loss = F.nll_loss(F.log_softmax(model(data), dim=1), target)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    print(f"epoch {epoch} loss {total / batches:.4f} batches {batches}")


def main():
    parser = argparse.ArgumentParser(description="seeded workers")
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=7025)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)

    g = torch.Generator()
    g.manual_seed(0)
    train_loader = DataLoader(AugmentedDigits(args.n), batch_size=args.batch_size, shuffle=True, drop_last=True,
                              num_workers=args.num_workers, worker_init_fn=seed_worker, generator=g)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer, epoch)


if __name__ == "__main__":
    main()
