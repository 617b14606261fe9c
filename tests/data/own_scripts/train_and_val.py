"""Two loaders: training with 2 workers, validation with none; --workers sets the training one."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def evaluate(model, val_loader):
    with torch.no_grad():
        return sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    train_data = TensorDataset(torch.randn(192, 3), torch.randn(192, 1))
    val_data = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
    train_loader = DataLoader(train_data, batch_size=16, shuffle=True, num_workers=args.workers)
    val_loader = DataLoader(val_data, batch_size=32)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(train_loader):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    print(f"val loss {evaluate(model, val_loader):.3f}")


if __name__ == "__main__":
    main()
