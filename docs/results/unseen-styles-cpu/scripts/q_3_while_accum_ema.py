"""A `while True:` loop over `next(it)` that breaks on StopIteration, gradient accumulation in a helper object whose
`.step(loss)` does the backward and, every `accum` calls, the optimizer step, and an EMA of the weights
(`torch.optim.swa_utils.AveragedModel`) updated after each optimizer step and evaluated each epoch."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, Dataset


class Spirals(Dataset):
    """Two-arm spirals in 2-D lifted to 64 features by a random polynomial map computed per item."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.t = torch.rand(n, generator=g) * 12
        self.y = torch.randint(0, 2, (n,), generator=g)
        self.jitter = torch.randn(n, 2, generator=g) * 0.3
        self.proj = torch.randn(2, 64, generator=torch.Generator().manual_seed(99))

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        t, y = self.t[i], self.y[i]
        sign = 1.0 if y == 1 else -1.0
        p = torch.stack([sign * t * torch.cos(t), sign * t * torch.sin(t)]) / 12 + self.jitter[i] / 12
        feats = p @ self.proj
        for _ in range(60):  # per-item work
            feats = torch.tanh(feats + 0.05 * torch.sin(3 * feats))
        return feats, y


class GradAccumulator:
    def __init__(self, optimizer, every):
        self.optimizer, self.every, self.calls = optimizer, every, 0

    def step(self, loss):
        (loss / self.every).backward()
        self.calls += 1
        if self.calls % self.every == 0:
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            return True
        return False


def train_epoch(model, ema, loader, accum):
    model.train()
    it = iter(loader)
    total, n = 0.0, 0
    while True:
        try:
            x, y = next(it)
        except StopIteration:
            break
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        if accum.step(loss):
            ema.update_parameters(model)
        total += loss.item()
        n += 1
    return total / n, n


@torch.no_grad()
def accuracy(model, loader):
    model.eval()
    hits = seen = 0
    for x, y in loader:
        hits += (model(x).argmax(1) == y).sum().item()
        seen += len(y)
    return hits / seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--accum", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    train_set, val_set = Spirals(4000, seed=1), Spirals(1000, seed=2)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    val_loader = DataLoader(val_set, batch_size=500)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 2))
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    accum = GradAccumulator(opt, args.accum)
    start = time.time()
    for epoch in range(args.epochs):
        t0 = time.time()
        loss, n = train_epoch(model, ema, loader, accum)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} acc {accuracy(model, val_loader):.3f} "
              f"ema_acc {accuracy(ema, val_loader):.3f} time {time.time() - t0:.1f}s", flush=True)
    print(f"total {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
