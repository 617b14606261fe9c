"""Online hard-example mining: the Dataset returns each item's index, the loss is taken with reduction='none',
each sample's latest loss is written into a buffer, and at the end of every epoch the WeightedRandomSampler's
weights are replaced in place (sampler.weights = ...) so the next epoch draws the hard examples more often.
ReduceLROnPlateau steps on the validation loss."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, WeightedRandomSampler


class NoisyBlobs(Dataset):
    """2-D points from 6 Gaussian blobs, lifted to 64 features by a fixed random map with some per-item noise work."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.centres = np.random.default_rng(0).normal(0, 2.5, (6, 2)).astype(np.float32)
        self.labels = rng.integers(0, 6, n)
        self.points = (self.centres[self.labels] + rng.normal(0, 1.0, (n, 2))).astype(np.float32)
        self.lift = np.random.default_rng(1).normal(0, 1, (2, 64)).astype(np.float32)
        self.seed = seed

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        rng = np.random.default_rng(self.seed * 100_003 + idx)
        feats = np.tanh(self.points[idx] @ self.lift)
        for _ in range(110):  # stands in for a costly decode
            feats = 0.98 * feats + 0.02 * np.sin(feats + rng.normal(0, 0.01, feats.shape).astype(np.float32))
        return torch.from_numpy(feats.astype(np.float32)), int(self.labels[idx]), idx


def build_model():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 6))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--bs", type=int, default=64)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--temperature", type=float, default=1.0)
    args = p.parse_args()
    torch.manual_seed(0)

    train_set, val_set = NoisyBlobs(4096, seed=1), NoisyBlobs(512, seed=2)
    sample_loss = torch.ones(len(train_set))
    sampler = WeightedRandomSampler(weights=sample_loss.clone(), num_samples=len(train_set), replacement=True)
    train_loader = DataLoader(train_set, batch_size=args.bs, sampler=sampler, num_workers=args.workers)
    val_loader = DataLoader(val_set, batch_size=256)

    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0)

    for epoch in range(args.epochs):
        model.train()
        seen, running = 0, 0.0
        for x, y, idx in train_loader:
            logits = model(x)
            per_sample = F.cross_entropy(logits, y, reduction="none")
            loss = per_sample.mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            sample_loss[idx] = per_sample.detach()
            running += loss.item() * len(y)
            seen += len(y)
        # harder examples are drawn more often next epoch
        sampler.weights = torch.softmax(sample_loss / args.temperature, dim=0).double()

        model.eval()
        val_loss, correct = 0.0, 0
        with torch.no_grad():
            for x, y, _ in val_loader:
                out = model(x)
                val_loss += F.cross_entropy(out, y, reduction="sum").item()
                correct += (out.argmax(1) == y).sum().item()
        val_loss /= len(val_set)
        scheduler.step(val_loss)
        print(f"epoch {epoch + 1}/{args.epochs}  batches {len(train_loader)}  train {running / seen:.4f}  "
              f"val {val_loss:.4f}  acc {correct / len(val_set):.3f}  lr {optimizer.param_groups[0]['lr']:.4f}  "
              f"max weight {sampler.weights.max().item() * len(train_set):.2f}x", flush=True)


if __name__ == "__main__":
    main()
