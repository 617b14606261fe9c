import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--num-workers", type=int, default=0)
args = p.parse_args()


@profile
def train(loader, model):
    for x, y in loader:
        model(x.cuda())


train(DataLoader(TensorDataset(torch.randn(512, 10), torch.zeros(512)), batch_size=32,
                 num_workers=args.num_workers, pin_memory=True), torch.nn.Linear(10, 1).cuda())
