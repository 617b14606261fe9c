"""Mixup on the CPU in the training loop itself, beside a decoding loader: the step uses torch's CPU
threads, which the loader's workers compete with, so the step grows as workers are added. Lightning-ish
style: a LitModel-like class with training_step, driven by a hand-written fit()."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.rand(3, 64, 64, generator=g)
        for _ in range(3):
            x = torch.nn.functional.avg_pool2d(x, 3, 1, 1)
        return x, i % 10


class LitModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

    def training_step(self, batch, device):
        x, y = batch
        lam = torch.distributions.Beta(0.4, 0.4).sample()
        perm = torch.randperm(len(x))
        x = lam * x + (1 - lam) * x[perm]                      # mixup, on the CPU
        x = x + 0.01 * torch.randn_like(x)
        x, y, yp = x.to(device, non_blocking=True), y.to(device), y[perm].to(device)
        out = self.net(x)
        return lam * nn.functional.cross_entropy(out, y) + (1 - lam) * nn.functional.cross_entropy(out, yp)


def fit(model, loader, epochs, device):
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    for epoch in range(epochs):
        t = time.perf_counter()
        for batch in loader:
            loss = model.training_step(batch, device)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} {time.perf_counter() - t:.2f}s loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=16384)
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fit(LitModel().to(dev), DataLoader(Noisy(a.samples), batch_size=128, shuffle=True, num_workers=a.num_workers,
                                       pin_memory=True), a.epochs, dev)
