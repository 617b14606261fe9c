"""Out of reach: the loop runs at module level, outside any function."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(32, 2), torch.randn(32, 1)), batch_size=8)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
print("trained")
