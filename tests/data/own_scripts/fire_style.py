"""A Fire-style command line: main()'s keywords are the options (`--num_workers=0`), read from sys.argv by hand,
with no argparse; the DataLoader takes the count from main()'s parameter."""
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main(epochs=2, num_workers=1, lr=0.01):
    data = TensorDataset(torch.randn(256, 3), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=int(num_workers))
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(lr))
    for _ in range(int(epochs)):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


def fire(function):
    """Call `function` with each `--name=value` of the command line as a keyword."""
    function(**dict(arg[2:].split("=", 1) for arg in sys.argv[1:] if arg.startswith("--") and "=" in arg))


if __name__ == "__main__":
    fire(main)
