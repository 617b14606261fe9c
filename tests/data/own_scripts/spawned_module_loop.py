"""One process through mp.spawn, whose function calls the loop in the user's own package (mypkg.engine)."""
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from mypkg.engine import train_one_epoch


def main_worker(rank):
    model = nn.Linear(5, 1)
    loader = DataLoader(TensorDataset(torch.randn(64, 5), torch.randn(64, 1)), batch_size=8)
    train_one_epoch(model, loader, torch.optim.SGD(model.parameters(), lr=0.01))
    print("trained")


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=1)
