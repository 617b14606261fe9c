"""Configured from the environment only (12-factor style, as in many container/Slurm launch scripts):
NUM_WORKERS, EPOCHS, BATCH_SIZE, LR, SEED. No argparse. NUM_WORKERS defaults to what the CPU mask allows."""
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


NUM_WORKERS = env_int("NUM_WORKERS", min(2, len(os.sched_getaffinity(0)) - 1))
EPOCHS = env_int("EPOCHS", 3)
BATCH_SIZE = env_int("BATCH_SIZE", 32)
LR = float(os.environ.get("LR", "0.05"))
SEED = env_int("SEED", 1234)


class TabularNoise(Dataset):
    """Rows of a synthetic tabular problem; __getitem__ builds random-Fourier features per row (CPU work)."""

    def __init__(self, n, n_features=24, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, n_features, generator=g)
        w = torch.randn(n_features, generator=g)
        self.y = ((self.x @ w).sin() + 0.3 * self.x[:, 0] > 0).float()
        self.proj = torch.randn(n_features, 512, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        row = self.x[idx]
        feats = torch.cat([torch.cos(row @ self.proj), torch.sin(row @ self.proj)])
        for _ in range(160):
            feats = feats + 0.001 * torch.tanh(feats)
        return feats, self.y[idx]


def train():
    torch.manual_seed(SEED)
    print(f"config: NUM_WORKERS={NUM_WORKERS} EPOCHS={EPOCHS} BATCH_SIZE={BATCH_SIZE} LR={LR}", flush=True)
    dataset = TabularNoise(1024, seed=SEED)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, num_workers=NUM_WORKERS,
                        persistent_workers=NUM_WORKERS > 0)
    model = nn.Sequential(nn.Linear(1024, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 1))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    for epoch in range(EPOCHS):
        start, total, batches = time.time(), 0.0, 0
        model.train()
        for features, target in loader:
            logits = model(features).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        print(f"epoch {epoch}: loss={total / batches:.4f} batches={batches} time={time.time() - start:.1f}s", flush=True)


if __name__ == "__main__":
    train()
