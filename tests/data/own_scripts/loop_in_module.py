"""The script only wires things up; the loop is in mypkg.engine."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from mypkg.engine import train_one_epoch


def main():
    data = TensorDataset(torch.randn(128, 5), torch.randn(128, 1))
    loader = DataLoader(data, batch_size=16, num_workers=0)
    model = nn.Linear(5, 1)
    train_one_epoch(model, loader, torch.optim.SGD(model.parameters(), lr=0.01))


if __name__ == "__main__":
    main()
