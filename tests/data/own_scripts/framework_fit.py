"""The loop lives in a framework's trainer (tests/data/framework/site-packages/tinytrainer.py, on PYTHONPATH), as with
Lightning: the script defines the model, the training and validation data, and calls fit()."""
import argparse
import time

import torch
from tinytrainer import Trainer
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowReads(Dataset):
    def __len__(self):
        return 192

    def __getitem__(self, i):
        time.sleep(0.002)  # a read from a slow disk
        return torch.full((8,), float(i % 5)), i % 5


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 5)

    def training_step(self, batch):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def train_dataloader(self):
        return DataLoader(SlowReads(), batch_size=8, shuffle=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    args = ap.parse_args()
    Trainer(max_epochs=args.epochs).fit(Classifier(), DataLoader(SlowReads(), batch_size=8))
