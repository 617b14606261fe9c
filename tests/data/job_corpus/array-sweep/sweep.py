import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

LEARNING_RATES = [1e-4, 3e-4, 1e-3, 3e-3]

parser = argparse.ArgumentParser()
parser.add_argument("--index", type=int, required=True)
parser.add_argument("--workers", type=int, default=2)
args = parser.parse_args()

data = TensorDataset(torch.randn(2048, 20), torch.randn(2048, 1))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=args.workers)
model = torch.nn.Linear(20, 1)
opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATES[args.index])
for x, y in loader:
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
