"""A DataLoader built by a helper with no workers, its count set on it afterwards (unseen u_6's style)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def build_loader(data, batch_size):
    return DataLoader(data, batch_size=batch_size, shuffle=True, num_workers=0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    loader = build_loader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), 8)
    loader.num_workers = args.workers
    loader.prefetch_factor = 2 if loader.num_workers else None  # torch wants one where there are workers
    net = nn.Linear(8, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done, workers {loader.num_workers}", flush=True)


if __name__ == "__main__":
    main()
