import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--data-workers", type=int, default=2)
parser.add_argument("--batch", type=int, default=16)
opts = parser.parse_args()

clips = TensorDataset(torch.randn(2048, 16000), torch.randint(0, 30, (2048,)))
train_loader = DataLoader(clips, batch_size=opts.batch, num_workers=opts.data_workers)
for wave, label in train_loader:
    pass
