"""Workers sized by the machine, as many blog posts do: `num_workers=min(1, os.cpu_count())`, no flag."""
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train():
    data = TensorDataset(torch.randn(192, 3), torch.randn(192, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=min(1, os.cpu_count()))
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    train()
