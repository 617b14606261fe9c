"""A model compiled with torch.jit.script, its forward written with `F` (torch.nn.functional), as older scripts do.
Under `profiling run` forward is line-profiled, and TorchScript compiled line_profiler's wrapper instead of it,
looking `F` up in line_profiler's module: `RuntimeError: undefined value F` before the first batch (unseen k_3)."""
import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Linear(16, 32), nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.hidden(x)))


def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(2048, 16), torch.randint(0, 3, (2048,)))
    model = torch.jit.script(Net())
    train(model, DataLoader(data, batch_size=32, shuffle=True), args.epochs)
