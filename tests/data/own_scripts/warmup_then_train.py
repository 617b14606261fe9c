"""Ways around the training loop from unseen batch m: `main()` run twice, a few warm-up steps first, each run building
its loader at one line (m_2); a validation pass before training (m_4); a Sampler of the script's own that shuffles
(m_4); the workers set by `--nw` (m_4); with --outer-no-grad, the epochs under `torch.no_grad()` and each step
turning gradients back on (m_1)."""
import argparse
import contextlib
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Sampler, TensorDataset


class Slow(TensorDataset):
    """Items that take a while to build, so that the loader, not the step, holds the loop back."""

    def __getitem__(self, i):
        time.sleep(0.0003)
        return super().__getitem__(i)


class ChunkShuffle(Sampler):
    """Whole chunks of 32 items in a new order each epoch (a random sampler torch does not know as one)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for chunk in torch.randperm(self.n // 32).tolist():
            yield from range(32 * chunk, 32 * chunk + 32)

    def __len__(self):
        return self.n


@torch.enable_grad()
def step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def fit(model, opt, loader, args, epochs, steps):
    with torch.no_grad() if args.outer_no_grad else contextlib.nullcontext():
        for epoch in range(epochs):
            batches = 0
            for x, y in loader:
                loss, batches = step(model, opt, x, y), batches + 1
                if batches == steps:
                    break
            print(f"epoch {epoch}: {batches} batches, loss {loss:.6f}", flush=True)


def main(args, epochs, steps=0):
    torch.manual_seed(0)
    data = Slow(torch.randn(1280, 8), torch.randn(1280, 1))
    loader = DataLoader(data, batch_size=16, sampler=ChunkShuffle(len(data)), num_workers=args.nw)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if not args.no_val:
        val = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=16)
        with torch.no_grad():
            print(f"before training: {sum(float(nn.functional.mse_loss(model(x), y)) for x, y in val):.6f}")
    fit(model, opt, loader, args, epochs, steps)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nw", type=int, default=1, help="DataLoader workers")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--outer-no-grad", action="store_true")
    parser.add_argument("--no-val", action="store_true")
    args = parser.parse_args()
    main(args, epochs=1, steps=5)  # warm-up
    main(args, epochs=args.epochs)
