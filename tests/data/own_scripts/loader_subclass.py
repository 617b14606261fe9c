"""A DataLoader subclass that moves each batch to the device in its own __iter__ (a 'DeviceLoader')."""
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 192

    def __getitem__(self, i):
        x = torch.full((6,), float(i % 7))
        return x, x.pow(2).sum(0, keepdim=True)


class DeviceLoader(DataLoader):
    def __init__(self, *args, device="cpu", **kwargs):
        super().__init__(*args, **kwargs)
        self.device = device

    def __iter__(self):
        for x, y in super().__iter__():
            yield x.to(self.device), y.to(self.device)


def train(loader, epochs):
    model = nn.Linear(6, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()


if __name__ == "__main__":
    train(DeviceLoader(Squares(), batch_size=16, shuffle=True, num_workers=1), 2)
