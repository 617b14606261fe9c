"""The step lives in a function of its own, and the loop only calls it: `losses.append(train_step(...))`."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 16))

    def forward(self, x):
        return self.layers(x)


def train_step(model, batch, target, optimizer):
    optimizer.zero_grad()
    output = model(batch)
    loss = nn.functional.mse_loss(output, target)
    loss.backward()
    optimizer.step()
    return loss.detach()


def train_epoch(model, loader, optimizer):
    losses = []
    for batch, target in loader:
        losses.append(train_step(model, batch, target, optimizer))
    return float(torch.stack(losses).mean())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(2048, 256), torch.randn(2048, 16))
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(data, batch_size=32, shuffle=True)
    for epoch in range(args.epochs):
        print(f"epoch {epoch} loss {train_epoch(model, loader, optimizer):.4f}")


if __name__ == "__main__":
    main()
