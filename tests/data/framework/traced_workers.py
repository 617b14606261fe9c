"""A script whose loop runs in an installed trainer (site-packages/tinyhf.py), started from module level, so no
profiled function runs when the DataLoader forks its workers. Its dataset notes, in each process, whether a line
tracer is on inside `__getitem__`: a worker must never trace (tests/test_own_scripts.py)."""
import argparse
import os
import sys

import torch
from tinyhf import Trainer
from torch import nn
from torch.utils.data import Dataset


class Probed(Dataset):
    def __init__(self, out):
        self.out = out

    def __len__(self):
        return 96

    def __getitem__(self, i):
        with open(self.out, "a") as notes:
            notes.write(f"{os.getpid()} {sys.gettrace() is not None}\n")
        return torch.full((8,), float(i % 5)), i % 5


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    Trainer(nn.Linear(8, 5), Probed(args.out), epochs=args.epochs, dataloader_num_workers=2).train()
