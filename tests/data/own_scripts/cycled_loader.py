"""A step budget over `itertools.cycle(loader)`: cycle keeps the first epoch's batches and replays them, so the
DataLoader gives one epoch (8 batches) and the loop steps 40 times."""
import itertools

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, train_loader, optimizer, steps):
    data_iter = itertools.cycle(train_loader)
    for step in range(steps):
        x, y = next(data_iter)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    print(f"{steps} steps", flush=True)


if __name__ == "__main__":
    data = TensorDataset(torch.randn(128, 3), torch.randn(128, 1))
    model = nn.Linear(3, 1)
    train(model, DataLoader(data, batch_size=16, shuffle=True), torch.optim.SGD(model.parameters(), lr=0.01), 40)
