"""Configured from the environment, as many launch scripts do: NUM_WORKERS sets the loader's workers."""
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NUM_WORKERS = int(os.environ.get("NUM_WORKERS", "1"))


def train():
    data = TensorDataset(torch.randn(192, 3), torch.randn(192, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=NUM_WORKERS)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    train()
