"""pytorch/examples' mnist/main.py style: the loader's settings gathered in a dict, `DataLoader(ds, **train_kwargs)`,
its worker count from --workers (unseen j_1)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    train_kwargs = {"batch_size": 16, "shuffle": True}
    train_kwargs.update({"num_workers": args.workers})
    train_loader = DataLoader(TensorDataset(torch.randn(256, 3), torch.randn(256, 1)), **train_kwargs)
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
