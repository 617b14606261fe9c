"""A loop that builds its DataLoader anew every epoch, as some tutorials do (its workers start again each time)."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((8,), float(i % 5)), i % 5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    net = nn.Linear(8, 5)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        loader = DataLoader(Slow(), batch_size=8, shuffle=True, num_workers=1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done", flush=True)


if __name__ == "__main__":
    main()
