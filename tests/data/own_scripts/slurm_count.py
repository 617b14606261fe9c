"""A cluster habit: the worker count is read from the Slurm allocation, one CPU kept for the main process, and the
DataLoader is built by a factory in a module of the project's own, beside the script."""
import os

import torch
from torch import nn

from slurm_count_data import build_loader

NUM_WORKERS = max(0, int(os.environ.get("SLURM_CPUS_PER_TASK", "2")) - 1)


def main():
    loader = build_loader(num_workers=NUM_WORKERS)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


if __name__ == "__main__":
    main()
