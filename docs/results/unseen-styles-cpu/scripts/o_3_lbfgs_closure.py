"""Scientific-ML style: a small MLP surrogate fitted with `torch.optim.LBFGS` and a `closure` (as in
physics-informed nets, neural style transfer and many curve-fitting scripts). The closure is defined inside the
batch loop; it zeroes the gradients, runs the model, computes the loss and calls `loss.backward()`, and
`optimizer.step(closure)` calls it up to `max_iter` (+ line search) times a batch. So the forward and backward
passes run *inside* the optimizer line; the loop body has no `loss.backward()` of its own at the loop's level.

Data: features already in memory; `__getitem__` only adds a little noise (about 0.02 ms a sample); big batches
(512) and a step of many closure calls (roughly 100+ ms a batch on one core). The loader is nowhere near the
bottleneck, and the script asks for 2 workers by default (`--num-workers 2`).

A correct report: the loop waits well under 5 % of a step; nothing to try; compute-bound, keep the count (or say
fewer would do: 0 workers cost nothing here). On a 2-CPU machine 2 workers beside the main process overcommit the
cores, which a warning may say. The phases should show the step's time in the optimizer line, and ideally say that
forward/backward run inside the closure (not "optimizer" as if `step()` itself were slow).
"""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class HeatSolutions(Dataset):
    """Samples (x, t, k) -> u(x, t) of the 1-D heat equation with diffusivity k, plus measurement noise."""

    def __init__(self, n=16384, seed=0):
        rng = np.random.default_rng(seed)
        self.inp = rng.uniform([0.0, 0.0, 0.1], [1.0, 1.0, 2.0], size=(n, 3)).astype(np.float32)
        x, t, k = self.inp.T
        self.out = (np.exp(-k * math.pi ** 2 * t) * np.sin(math.pi * x)
                    + 0.3 * np.exp(-k * 9 * math.pi ** 2 * t) * np.sin(3 * math.pi * x)).astype(np.float32)

    def __len__(self):
        return len(self.out)

    def __getitem__(self, i):
        noise = np.float32(np.random.default_rng(i).normal(0, 0.01))
        return torch.from_numpy(self.inp[i]), torch.tensor([self.out[i] + noise])


def mlp(width=128, depth=4):
    layers, d = [], 3
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.Tanh()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, 1))


def fit(model, loader, optimizer, epochs):
    loss_fn = nn.MSELoss()
    for epoch in range(epochs):
        running, n = 0.0, 0
        for xb, yb in loader:
            def closure():
                optimizer.zero_grad()
                pred = model(xb)
                loss = loss_fn(pred, yb)
                loss.backward()
                return loss

            loss = optimizer.step(closure)
            running += loss.item()
            n += 1
        print(f"epoch {epoch} mse {running / n:.6f} batches {n}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--max-iter", type=int, default=8)
    args = p.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(HeatSolutions(), batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    model = mlp()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=args.max_iter, history_size=20,
                                  line_search_fn="strong_wolfe")
    fit(model, loader, optimizer, args.epochs)


if __name__ == "__main__":
    main()
