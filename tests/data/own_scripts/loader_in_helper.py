"""The DataLoader is built in a helper function, with a --num-workers flag of the script's own."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    """A map-style dataset that does a little work per item, like decoding would."""

    def __len__(self):
        return 192

    def __getitem__(self, i):
        x = torch.full((6,), float(i % 7))
        return x, x.pow(2).sum(0, keepdim=True)


def make_loader(workers):
    return DataLoader(Squares(), batch_size=16, shuffle=True,
                      num_workers=workers)


def fit(loader, epochs):
    model = nn.Linear(6, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        print(f"epoch {epoch} done", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    fit(make_loader(args.num_workers), args.epochs)
