"""A dataset that fetches a whole batch at once from a list of indices, fed by a BatchSampler given as the sampler,
with automatic batching off (`batch_size=None`), as fast-loading code does (unseen k_4): worker counts were not
tried, and the fallback curve rebuilt it with batch_size=1 and a sequential sampler."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler


class Rows(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 8), torch.randn(n, 1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, rows):  # a list of indices: the whole batch
        time.sleep(0.003)  # a read from disk, say
        return self.x[rows], self.y[rows]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=2048)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = Rows(args.samples)
    sampler = BatchSampler(RandomSampler(data), batch_size=16, drop_last=True)
    loader = DataLoader(data, sampler=sampler, batch_size=None, num_workers=args.jobs)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        batches = 0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            batches += 1
        print(f"epoch {epoch}: {batches} batches, loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
