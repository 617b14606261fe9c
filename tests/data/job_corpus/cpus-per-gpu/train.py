import torch
from torch.utils.data import DataLoader, TensorDataset

WORKERS = 6

ds = TensorDataset(torch.randn(512, 16))
loader = DataLoader(ds, batch_size=16, num_workers=WORKERS, pin_memory=True)
for (x,) in loader:
    x.cuda(non_blocking=True)
