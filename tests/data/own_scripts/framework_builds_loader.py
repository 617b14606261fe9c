"""The framework builds the DataLoader too (tests/data/framework/site-packages/tinyhf.py, on PYTHONPATH), as Hugging
Face's Trainer does: the script hands it a dataset and calls train(); no line of the script builds a loader."""
import argparse
import time

import torch
from tinyhf import Trainer
from torch import nn
from torch.utils.data import Dataset


class SlowReads(Dataset):
    def __len__(self):
        return 192

    def __getitem__(self, i):
        time.sleep(0.002)  # a read from a slow disk
        return torch.full((8,), float(i % 5)), i % 5


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    args = ap.parse_args()
    trainer = Trainer(nn.Linear(8, 5), SlowReads(), epochs=args.epochs)
    trainer.train()
