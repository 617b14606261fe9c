"""A model wrapped in torch.compile, as PyTorch 2 scripts do. Under `profiling run` every function of the script is
line-profiled, `forward` included, and Dynamo traced into line_profiler's wrapper and stopped the script at its first
batch. The eager backend is enough to show it: the failure is in Dynamo's tracing, before any backend."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Linear(16, 32), nn.Linear(32, 3)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
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
    model = torch.compile(Net(), backend="eager")
    train(model, DataLoader(data, batch_size=32, shuffle=True), args.epochs)
