"""Two loaders zipped in one loop, as semi-supervised training does (FixMatch): labelled and unlabelled batches side
by side. The unlabelled loader is the slow one, so the loop waits on the second loader of the zip."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __init__(self, n, item_ms):
        self.n, self.item_ms = n, item_ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.item_ms / 1e3)  # decoding, as a real dataset would
        return torch.full((8,), float(i % 5)), i % 2


def train(labelled, unlabelled, epochs):
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for (x, y), (u, _) in zip(labelled, unlabelled):
            loss = nn.functional.cross_entropy(model(x), y) + model(u).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--unlabelled-ms", type=float, default=1.0, help="sleep per unlabelled item")
    args = parser.parse_args()
    torch.manual_seed(0)
    labelled = DataLoader(Items(512, 0.0), batch_size=16, shuffle=True, num_workers=1)
    unlabelled = DataLoader(Items(512, args.unlabelled_ms), batch_size=16, shuffle=True, num_workers=1)
    train(labelled, unlabelled, args.epochs)
