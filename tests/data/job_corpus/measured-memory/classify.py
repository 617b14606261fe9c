import torch
from torch.utils.data import DataLoader, TensorDataset


@profile
def train(loader):
    for x, y in loader:
        pass


train(DataLoader(TensorDataset(torch.randn(4096, 784), torch.zeros(4096)), batch_size=64, num_workers=2))
