"""pytorch/examples' mnist/main.py style: the loader's settings gathered in a dict, `DataLoader(ds, **train_kwargs)`,
its worker count from --workers (unseen j_1)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(n, dim):
    return TensorDataset(torch.randn(n, dim), torch.randn(n, 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    train_kwargs = {"batch_size": 16, "shuffle": True}
    train_kwargs.update({"num_workers": args.workers})
    data_cfg = {"n": 256, "dim": 3}
    train_loader = DataLoader(make_data(**data_cfg), **train_kwargs)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(args.epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    print(f"trained {args.epochs} epoch(s) with {train_loader.num_workers} worker(s), "
          f"persistent {train_loader.persistent_workers}")


if __name__ == "__main__":
    main()
