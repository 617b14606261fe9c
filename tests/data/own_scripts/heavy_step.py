"""A compute-heavy step beside a cheap loader, in a plain functional style (no classes, no argparse groups).

The model's forward pass is a stack of matrix products on the CPU, far longer than building a batch,
so the loop waits only a little for data: the loader is not the bottleneck.
"""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def forward(w, x):
    for layer in w:
        x = torch.tanh(x @ layer)
    return x


def main(epochs=3):
    torch.manual_seed(1)
    data = TensorDataset(torch.randn(128, 256), torch.randint(0, 4, (128,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    w = [torch.randn(256, 256, requires_grad=True) for _ in range(6)]
    opt = torch.optim.SGD(w, lr=1e-3)
    for epoch in range(epochs):
        for x, y in loader:
            for _ in range(8):  # the heavy part: several passes per batch
                loss = forward(w, x)[:, :4].logsumexp(1).mean() - forward(w, x)[torch.arange(len(y)), y].mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
