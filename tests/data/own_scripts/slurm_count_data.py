"""The project's loader factory: the training script only says how many workers it wants."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def build_loader(num_workers=0):
    data = TensorDataset(torch.randn(256, 3), torch.randn(256, 1))
    return DataLoader(data, batch_size=16, shuffle=True, num_workers=num_workers)
