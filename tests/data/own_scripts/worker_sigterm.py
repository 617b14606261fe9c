"""Prints whether a DataLoader worker dies of SIGTERM (its default), as torch's shutdown of a stuck worker expects."""
import signal
import torch
from torch.utils.data import DataLoader, Dataset


class Disposition(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor(float(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL))


def main():
    for batch in DataLoader(Disposition(), batch_size=4, num_workers=1):
        print("worker SIGTERM default:", bool(batch.min()))


main()
