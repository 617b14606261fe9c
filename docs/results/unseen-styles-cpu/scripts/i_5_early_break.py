"""A fixed number of optimisation steps per "epoch" taken from a larger loader (`if step >= steps_per_epoch: break`
inside `for batch in loader`), as in RL / large-corpus / quick-iteration scripts, plus a validation pass after each
epoch and early stopping on the validation loss (patience, best checkpoint kept in memory)."""
import argparse
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Regression(Dataset):
    """y = a smooth nonlinear function of x, x built per item with a little iterative CPU work."""

    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset
        self.w = torch.randn(32, generator=torch.Generator().manual_seed(123))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.offset + i)
        x = torch.randn(32, generator=g)
        for _ in range(120):  # feature "preprocessing": the loader's CPU work
            x = 0.9 * x + 0.1 * torch.tanh(x.roll(1) * x)
        x = x / (x.std() + 1e-6)
        y = torch.sin(x @ self.w / 4) + 0.1 * torch.randn(1, generator=g).squeeze()
        return x, y


def train_epoch(model, loader, optimizer, steps_per_epoch):
    model.train()
    total, steps = 0.0, 0
    for step, (x, y) in enumerate(loader):
        if step >= steps_per_epoch:
            break
        loss = F.mse_loss(model(x).squeeze(-1), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        steps += 1
    return total / steps, steps


@torch.no_grad()
def validate(model, loader):
    model.eval()
    total, n = 0.0, 0
    for x, y in loader:
        total += F.mse_loss(model(x).squeeze(-1), y, reduction="sum").item()
        n += len(y)
    return total / n


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=8, help="upper bound; early stopping usually ends sooner")
    ap.add_argument("--steps-per-epoch", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--num_workers", type=int, default=1)
    ap.add_argument("--patience", type=int, default=0)
    ap.add_argument("--min-delta", type=float, default=0.02)
    ap.add_argument("--lr", type=float, default=1e-2)
    args = ap.parse_args()
    torch.manual_seed(0)

    train_loader = DataLoader(Regression(8192), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, drop_last=True)
    val_loader = DataLoader(Regression(512, offset=10**6), batch_size=128, num_workers=args.num_workers)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    best, best_state, bad_epochs = float("inf"), None, 0
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        train_loss, steps = train_epoch(model, train_loader, optimizer, args.steps_per_epoch)
        val_loss = validate(model, val_loader)
        print(f"epoch {epoch} loss {train_loss:.4f} val {val_loss:.4f} batches {steps} of {len(train_loader)} "
              f"({time.perf_counter() - t0:.1f}s)", flush=True)
        if val_loss < best - args.min_delta:
            best, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs > args.patience:
                print(f"early stopping at epoch {epoch}: best val {best:.4f}", flush=True)
                break
    model.load_state_dict(best_state)


if __name__ == "__main__":
    main()
