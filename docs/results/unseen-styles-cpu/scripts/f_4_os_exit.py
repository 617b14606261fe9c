"""Ends with os._exit(0) after saving, as some scripts do so that no worker or thread can hang the exit."""
import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __len__(self):
        return 6000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(48, generator=g)
        for _ in range(30):
            x = x - 0.1 * torch.sin(x)
        return x, int(x[0] > 0)


def train(args):
    torch.manual_seed(0)
    loader = DataLoader(Noisy(), batch_size=32, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(48, 96), nn.GELU(), nn.Linear(96, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        total, count = 0.0, 0
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total, count = total + loss.item(), count + 1
        print(f"epoch {epoch} loss {total / count:.4f} batches {count}")
    return model


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--workers", type=int, default=1)
    model = train(p.parse_args())
    torch.save(model.state_dict(), os.path.join(tempfile.gettempdir(), "f_4_model.pt"))
    os._exit(0)
