"""A DDP-ready script run with one process: the loop runs in the child that torch.multiprocessing.spawn starts."""
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader):
    for x, y in loader:
        nn.functional.mse_loss(model(x), y).backward()


def main_worker(rank, world_size):
    train(nn.Linear(4, 1), DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8))
    print("trained")


if __name__ == "__main__":
    mp.spawn(main_worker, args=(1,), nprocs=1)
