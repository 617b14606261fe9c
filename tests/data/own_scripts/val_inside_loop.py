"""Validation every few steps inside the training loop, with its own worker that is not persistent: each pass over
the validation loader starts that worker anew."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(epochs=2, every=4):
    torch.manual_seed(0)
    train_loader = DataLoader(TensorDataset(torch.randn(384, 6), torch.randn(384, 1)), batch_size=16, shuffle=True,
                              num_workers=1, persistent_workers=True)
    val_loader = DataLoader(TensorDataset(torch.randn(64, 6), torch.randn(64, 1)), batch_size=32, num_workers=1)
    model = nn.Linear(6, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    time.sleep(0.05)  # set-up in the loop's own function, as loading a checkpoint would take
    for epoch in range(epochs):
        for step, (x, y) in enumerate(train_loader, start=1):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            if step % every == 0:
                with torch.no_grad():
                    val = sum(nn.functional.mse_loss(model(vx), vy).item() for vx, vy in val_loader)
        print(f"epoch {epoch} val {val:.3f}", flush=True)


if __name__ == "__main__":
    train()
