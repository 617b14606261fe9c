"""Workers from a helper that keeps two CPUs for the main process; a fallback off Slurm (corpus)."""
import os

import torch
from torch.utils.data import DataLoader, TensorDataset


def loader_workers():
    if "SLURM_CPUS_PER_TASK" not in os.environ:
        return 2
    return int(os.environ["SLURM_CPUS_PER_TASK"]) - 2


rows = TensorDataset(torch.randn(10000, 32), torch.randint(0, 2, (10000,)))
for batch in DataLoader(rows, batch_size=256, num_workers=loader_workers()):
    pass
