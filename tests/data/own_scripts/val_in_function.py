"""Validation in a function of its own, called every few steps from inside the training loop; its loader is slow."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset


class SlowValidation(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        time.sleep(0.002)  # reading a validation sample from disk
        return torch.randn(6), torch.randn(1)


def validate(model, loader):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.mse_loss(model(x), y).item()
    return total


def train(epochs=2, every=4):
    torch.manual_seed(0)
    train_loader = DataLoader(TensorDataset(torch.randn(384, 6), torch.randn(384, 1)), batch_size=16, shuffle=True)
    val_loader = DataLoader(SlowValidation(), batch_size=16)
    model = nn.Linear(6, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    for epoch in range(epochs):
        for step, (x, y) in enumerate(train_loader, start=1):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            if step % every == 0:
                val = validate(model, val_loader)
        print(f"epoch {epoch} val {val:.3f}", flush=True)


if __name__ == "__main__":
    train()
