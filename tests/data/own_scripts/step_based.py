"""Step-based training with no epochs: a fixed number of steps, batches pulled by hand with next(it),
and a new iterator started when the loader runs out (the style of many GAN and language-model scripts)."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(steps):
    data = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=1)
    model = nn.Linear(8, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    it = iter(loader)
    for step in range(steps):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=120)
    train(ap.parse_args().steps)
