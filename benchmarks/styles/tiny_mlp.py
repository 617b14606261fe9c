"""A tiny MLP on MNIST-shaped digits, its forward pass and loss each in a small function of their own.

Written in the style of many course notebooks turned scripts: module-level helpers, no classes beyond
the dataset, `--workers` on the command line. Synthetic digits (no download); each item is scaled
and normalised in Python, as a ToTensor + Normalize pipeline would.
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Digits(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = self.x[i].float().div(255)
        return ((x - 0.1307) / 0.3081).flatten(), int(self.y[i])


def build_model():
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def forward(model, x):
    return model(x)


def loss_fn(logits, y):
    return F.cross_entropy(logits, y)


def step(model, opt, x, y):
    opt.zero_grad()
    loss = loss_fn(forward(model, x), y)
    loss.backward()
    opt.step()
    return loss


def train_epoch(model, opt, loader, device):
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = step(model, opt, x, y)
    return loss.item()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--samples", type=int, default=60000)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(Digits(args.samples), batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        pin_memory=True)
    model = build_model().to(device)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    for epoch in range(args.epochs):
        t = time.perf_counter()
        loss = train_epoch(model, opt, loader, device)
        print(f"epoch {epoch} loss {loss:.3f} {time.perf_counter() - t:.2f}s", flush=True)
