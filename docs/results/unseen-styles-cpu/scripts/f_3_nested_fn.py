"""Notebook turned script: the epoch function is defined inside main(), a closure over the model and loader."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--bs", type=int, default=50)
    ap.add_argument("--nw", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(20000, 20)
    y = (x[:, :5].sum(1, keepdim=True) > 0).float()
    loader = DataLoader(TensorDataset(x, y), batch_size=args.bs, shuffle=True, num_workers=args.nw)
    net = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    lossf = nn.BCEWithLogitsLoss()

    def one_epoch():
        net.train()
        tot = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = lossf(net(xb), yb)
            loss.backward()
            opt.step()
            tot += loss.item() * len(xb)
        return tot / len(loader.dataset)

    for ep in range(args.epochs):
        print(f"epoch {ep} loss {one_epoch():.4f} batches {len(loader)}")


if __name__ == "__main__":
    main()
