"""timm's MultiEpochsDataLoader: one iterator, made in __init__ over a sampler that repeats, serves every epoch
(its workers are never restarted). The loop steps for 50 ms a batch; the data is ready at once."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class RepeatSampler:
    def __init__(self, sampler):
        self.sampler = sampler

    def __iter__(self):
        while True:
            yield from iter(self.sampler)


class MultiEpochsDataLoader(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._DataLoader__initialized = False
        self.batch_sampler = RepeatSampler(self.batch_sampler)
        self._DataLoader__initialized = True
        self.iterator = super().__iter__()

    def __len__(self):
        return len(self.batch_sampler.sampler)

    def __iter__(self):
        for _ in range(len(self)):
            yield next(self.iterator)


def train(model, loader, optimizer, epoch):
    seen = 0
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        time.sleep(0.05)  # the step's compute
        optimizer.step()
        seen += 1
    print(f"epoch {epoch} {seen} batches", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    data = TensorDataset(torch.randn(256, 3), torch.randn(256, 1))
    loader = MultiEpochsDataLoader(data, batch_size=16, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        train(model, loader, optimizer, epoch)


if __name__ == "__main__":
    main()
