import multiprocessing as mp

import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    data = TensorDataset(torch.randn(1000, 8))
    loader = DataLoader(data, batch_size=10, num_workers=mp.cpu_count())
    for batch in loader:
        pass
