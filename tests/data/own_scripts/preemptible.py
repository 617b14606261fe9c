"""A preemptible job's training script: on SIGUSR1 (Slurm's `--signal=B:USR1@90`, passed on by the batch script's
`trap 'kill -USR1 $PID' USR1`) it finishes the epoch, saves, and exits 0. Items sleep, so the loop waits for data."""
import argparse
import signal
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

stop = []


class Sleepy(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((8,), float(i % 5)), i % 5


def train(loader, epochs):
    net = nn.Linear(8, 5)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done", flush=True)
        if stop:
            print(f"stopping after epoch {epoch}: checkpoint saved", flush=True)
            return


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100000)
    parser.add_argument("--num-workers", type=int, default=0)
    args = parser.parse_args()
    signal.signal(signal.SIGUSR1, lambda signum, frame: stop.append(signum))
    train(DataLoader(Sleepy(), batch_size=8, num_workers=args.num_workers), args.epochs)
