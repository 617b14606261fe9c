"""argparse `--workers` with `type=int, choices=range(0, 9)` (default 0), `__main__` calling `main(**vars(args))`, and
the epoch loop inside `with torch.no_grad():` and each epoch's training re-enabled by `with torch.enable_grad():`. Correct edit: `--workers N` (N within 0..8)."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Poly(Dataset):
    def __init__(self, n=600):
        g = np.random.default_rng(5)
        self.x = g.uniform(-1, 1, size=(n, 8)).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        feats = np.polynomial.polynomial.polyvander(x, 3).reshape(-1).astype(np.float32)  # 32 features
        time.sleep(0.0006)
        return torch.from_numpy(feats), torch.tensor((x ** 3).sum() - x[0] * x[1], dtype=torch.float32)


def fit_one_epoch(model, loader, opt):
    model.train()
    total, count = 0.0, 0
    with torch.enable_grad():
        for feats, target in loader:
            out = model(feats).squeeze(1)
            loss = nn.functional.smooth_l1_loss(out, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            count += 1
    return total / count, count


@torch.no_grad()
def validate(model, loader):
    model.eval()
    return sum(nn.functional.l1_loss(model(f).squeeze(1), t).item() for f, t in loader) / len(loader)


def main(epochs, batch_size, workers, lr):
    torch.manual_seed(0)
    train_dl = DataLoader(Poly(), batch_size=batch_size, shuffle=True, num_workers=workers)
    val_dl = DataLoader(Poly(128), batch_size=64)
    model = nn.Sequential(nn.Linear(32, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    with torch.no_grad():
        for epoch in range(epochs):
            tr, n = fit_one_epoch(model, train_dl, opt)
            print(f"epoch {epoch}: {n} batches train {tr:.4f} val {validate(model, val_dl):.4f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=24)
    p.add_argument("--workers", type=int, default=0, choices=range(0, 9))
    p.add_argument("--lr", type=float, default=3e-3)
    args = p.parse_args()
    main(**vars(args))
