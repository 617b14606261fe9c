#!/usr/bin/env python3
"""timm-style training script (train_one_epoch with batch_idx/last_idx)."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    def __init__(self, n=3000, size=48, num_classes=10, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, size=(n, size, size, 3), dtype=np.uint8)
        self.targets = rng.integers(0, num_classes, size=n)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        img = Image.fromarray(self.images[idx])
        img = img.resize((40, 40), Image.BILINEAR).rotate(10)
        arr = np.asarray(img, dtype=np.float32) / 255.0
        arr = (arr - arr.mean()) / (arr.std() + 1e-6)
        for _ in range(3):
            arr = np.clip(arr + np.random.normal(0, 0.01, arr.shape).astype(np.float32), -3, 3)
        return torch.from_numpy(arr.transpose(2, 0, 1).copy()), int(self.targets[idx])


def create_model(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, num_classes),
    )


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args):
    model.train()
    last_idx = len(loader) - 1
    num_updates = epoch * len(loader)
    start = time.time()
    n_batches = 0
    losses = []
    for batch_idx, (input, target) in enumerate(loader):
        last_batch = batch_idx == last_idx
        output = model(input)
        loss = loss_fn(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        num_updates += 1
        n_batches += 1
        losses.append(loss.item())
        if last_batch or batch_idx % args.log_interval == 0:
            print(f"Train: {epoch} [{batch_idx:>4d}/{last_idx}] Loss: {loss.item():.4f}")
    elapsed = time.time() - start
    print(f"EPOCH {epoch} batches={n_batches} time={elapsed:.2f}s")
    return {"loss": float(np.mean(losses))}


def main():
    parser = argparse.ArgumentParser(description="timm-ish training")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("-b", "--batch-size", type=int, default=64)
    parser.add_argument("-j", "--workers", type=int, default=1, metavar="N")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--num-samples", type=int, default=2000)
    args = parser.parse_args()

    torch.manual_seed(0)
    dataset_train = SyntheticImages(n=args.num_samples)
    loader_train = DataLoader(
        dataset_train,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        drop_last=True,
    )
    model = create_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train_loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        train_metrics = train_one_epoch(epoch, model, loader_train, optimizer, train_loss_fn, args)
        print(f"epoch {epoch} train_metrics={train_metrics}")


if __name__ == "__main__":
    main()
