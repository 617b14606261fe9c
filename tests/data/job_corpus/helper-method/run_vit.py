"""A trainer class that sizes its own loader (written for this corpus)."""
import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, config):
        self.config = config
        self.data = TensorDataset(torch.randn(1024, 3, 32, 32), torch.randint(0, 10, (1024,)))

    def loader_workers(self):
        # one worker per CPU of the node share Slurm gave us
        return int(os.environ.get("SLURM_CPUS_ON_NODE", "4"))

    def loader(self):
        return DataLoader(self.data, batch_size=128, shuffle=True,
                          num_workers=self.loader_workers(), persistent_workers=True)

    def fit(self):
        for _ in self.loader():
            pass


if __name__ == "__main__":
    Trainer(sys.argv[-1]).fit()
