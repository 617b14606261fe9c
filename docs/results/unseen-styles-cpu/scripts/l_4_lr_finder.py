"""An LR range test first (as torch-lr-finder's LRFinder.range_test or fastai's lr_find): 40 batches of the training DataLoader at growing learning rates, model and optimiser restored after, then the epochs at the rate it picked."""
import argparse
import copy
import math
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Regression(Dataset):
    """Tabular rows with a nonlinear target; each row's 32 features come from a small numpy simulation."""

    def __init__(self, n=5000, seed=0):
        rng = np.random.default_rng(seed)
        self.params = rng.normal(size=(n, 4)).astype(np.float64)
        self.w = rng.normal(size=32)

    def __len__(self):
        return len(self.params)

    def __getitem__(self, i):
        a, b, c, d = self.params[i]
        t = np.linspace(0, 4, 600)
        y = np.zeros_like(t)
        v = 0.0
        for k in range(1, t.size):  # a damped oscillator, stepped in Python: the deliberately slow part
            v += (-(4.0 + abs(a)) * y[k - 1] - 0.5 * abs(b) * v + np.sin(3 * t[k] + c)) * 0.02
            y[k] = y[k - 1] + 0.02 * v
        feats = y[::600 // 32][:32] * 5 + 0.1 * d
        target = np.tanh(feats @ self.w / 8.0) + 0.05 * a * b
        return torch.tensor(feats, dtype=torch.float32), torch.tensor([target], dtype=torch.float32)


class LRFinder:
    """Exponential LR range test; restores the model and optimiser it was given."""

    def __init__(self, model, optimizer, criterion):
        self.model, self.optimizer, self.criterion = model, optimizer, criterion
        self.state = (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict()))
        self.history = {"lr": [], "loss": []}

    def range_test(self, loader, start_lr=1e-5, end_lr=1.0, num_iter=40, smooth=0.05):
        gamma = (end_lr / start_lr) ** (1 / (num_iter - 1))
        lr, avg, best = start_lr, None, math.inf
        self.model.train()
        for i, (x, y) in enumerate(loader):
            if i >= num_iter:
                break
            for g in self.optimizer.param_groups:
                g["lr"] = lr
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            avg = loss.item() if avg is None else smooth * loss.item() + (1 - smooth) * avg
            self.history["lr"].append(lr)
            self.history["loss"].append(avg)
            best = min(best, avg)
            if avg > 4 * best:
                break
            lr *= gamma

    def suggestion(self):
        losses = np.array(self.history["loss"])
        return self.history["lr"][int(np.argmin(losses))] / 10

    def reset(self):
        self.model.load_state_dict(self.state[0])
        self.optimizer.load_state_dict(self.state[1])


def fit(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        model.train()
        t0, total, batches = time.time(), 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
        print(f"epoch {epoch}: mse {total / batches:.5f} batches {batches} ({time.time() - t0:.1f}s)", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-j", "--workers", type=int, default=0)
    parser.add_argument("-b", "--batch-size", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()

    torch.manual_seed(1)
    train_loader = DataLoader(Regression(), batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.MSELoss()

    finder = LRFinder(model, optimizer, criterion)
    finder.range_test(train_loader, num_iter=40)
    lr = finder.suggestion()
    finder.reset()
    print(f"lr finder: {len(finder.history['lr'])} steps, suggested lr {lr:.2e}", flush=True)
    for g in optimizer.param_groups:
        g["lr"] = lr
    fit(model, train_loader, optimizer, criterion, args.epochs)


if __name__ == "__main__":
    main()
