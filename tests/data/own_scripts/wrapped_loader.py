"""A dataset class that holds its DataLoader and yields its batches on (pytorch-CycleGAN-and-pix2pix's layout): the
workers come from `--num_threads` through `int(...)`, and the loop sits at module level behind a model's method."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 48

    def __getitem__(self, i):
        time.sleep(0.001)
        return torch.full((8,), float(i % 3)), i % 3


class WrappedLoader:
    def __init__(self, opt):
        self.dataloader = DataLoader(Slow(), batch_size=4, shuffle=True, num_workers=int(opt.num_threads))

    def __iter__(self):
        for i, data in enumerate(self.dataloader):
            yield data


class Model:
    def __init__(self):
        self.net = nn.Linear(8, 3)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def optimize_parameters(self, data):
        x, y = data
        time.sleep(0.006)  # a heavier model's step
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_threads", default="0", help="threads for loading data")
    parser.add_argument("--epochs", type=int, default=3)
    opt = parser.parse_args()
    dataset, model = WrappedLoader(opt), Model()
    for epoch in range(opt.epochs):
        for data in dataset:
            model.optimize_parameters(data)
        print(f"epoch {epoch} done", flush=True)
