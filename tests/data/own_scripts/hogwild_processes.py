"""Hogwild: processes share one model's memory, each training it with the function a module of the user's holds."""
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import TensorDataset

from mypkg.hogwild import train

if __name__ == "__main__":
    model = nn.Linear(5, 1)
    model.share_memory()
    dataset = TensorDataset(torch.randn(64, 5), torch.randn(64, 1))
    processes = [mp.Process(target=train, args=(rank, model, dataset)) for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    print("trained")
