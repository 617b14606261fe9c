import torch
from torch.utils.data import DataLoader, TensorDataset

loader_kwargs = dict(batch_size=64, num_workers=2, pin_memory=True)
train_loader = DataLoader(TensorDataset(torch.randn(256, 4)), **loader_kwargs)
for (x,) in train_loader:
    x.cuda()
