"""A DataLoader subclass that moves each batch to the device in its own __iter__ (a common 'DeviceDataLoader')."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Blobs(Dataset):
    """Gaussian blobs in 32 dimensions; each item is jittered and normalised on the fly."""

    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 4, (n,), generator=g)
        self.centres = torch.randn(4, 32, generator=g) * 3

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(int(i))
        x = self.centres[self.labels[i]] + torch.randn(32, generator=g)
        for _ in range(40):
            x = torch.tanh(x * 1.01)
        return (x - x.mean()) / (x.std() + 1e-6), self.labels[i]


class DeviceDataLoader(DataLoader):
    def __init__(self, *args, device="cpu", **kwargs):
        super().__init__(*args, **kwargs)
        self.device = device

    def __iter__(self):
        for x, y in super().__iter__():
            yield x.to(self.device), y.to(self.device)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    loader = DeviceDataLoader(Blobs(12000), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, device=device)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        seen, total = 0, 0.0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            seen += 1
        print(f"epoch {epoch} loss {total / seen:.4f} batches {seen}")


if __name__ == "__main__":
    main()
