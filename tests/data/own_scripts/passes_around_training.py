"""Passes around the training loop (unseen batch l): a statistics pass over a loader that keeps its order, a peek at
one batch of the training loader, then epochs that tell the dataset its epoch (so its workers are deliberately not
persistent) and take the accuracy over the training loader without gradients."""
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, RandomSampler


class Told(Dataset):
    """Each item says the epoch the dataset was told when the item was built: a stale worker's items say an old one."""

    def __init__(self, n):
        self.x, self.y, self.epoch = torch.randn(n, 8), torch.randn(n, 1), 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.0003)  # the loader, not the step, holds the loop back
        return self.x[i] * (1 + self.epoch), self.y[i], self.epoch


def train(model, opt, loader, epoch, mean):
    batches = stale = 0
    for x, y, told in loader:
        loss = nn.functional.mse_loss(model(x - mean), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        batches, stale = batches + 1, stale + int((told != epoch).sum())
    return batches, stale, loss.item()


@torch.no_grad()
def accuracy(model, loader, mean):
    return sum(float((model(x - mean) - y).abs().lt(1).float().mean()) for x, y, _ in loader) / len(loader)


def main(workers=1, epochs=4):
    torch.manual_seed(0)
    data = Told(1280)
    mean = torch.cat([x for x, _, _ in DataLoader(data, batch_size=128)]).mean(0)  # the statistics pass
    # not persistent on purpose: a persistent worker keeps the dataset it forked with, and never sees set_epoch
    loader = DataLoader(data, batch_size=16, sampler=RandomSampler(data, num_samples=1024), num_workers=workers,
                        persistent_workers=False)  # an epoch of 64 batches, of a dataset of 80
    print("a batch:", tuple(next(iter(loader))[0].shape))  # the peek
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        data.set_epoch(epoch)
        batches, stale, loss = train(model, opt, loader, epoch, mean)
        print(f"epoch {epoch}: {batches} batches, {stale} stale items, loss {loss:.6f}, "
              f"accuracy {accuracy(model, loader, mean):.4f}", flush=True)


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
