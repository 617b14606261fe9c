"""Subcommands (`fit`, `evaluate`), each with its own --num-workers: the edit must say it goes after `fit`."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def fit(args):
    data = TensorDataset(torch.randn(192, 3), torch.randn(192, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=args.num_workers)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("fit", "evaluate"):
        sub.add_parser(name).add_argument("--num-workers", type=int, default=0)
    args = parser.parse_args()
    if args.command == "fit":
        fit(args)


if __name__ == "__main__":
    main()
