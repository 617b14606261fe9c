"""A loop whose step is known: each batch is held 20 ms, and 0.3 s pass between epochs (an evaluation).

For the capture hook's own timing of the loop: its compute per batch must come out at 20 ms or a
little over, never counting the first batch of an epoch or the time between epochs."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    parser.add_argument("--epochs", type=int, default=2, help="passes over the 8 batches")
    args = parser.parse_args()
    loader = DataLoader(TensorDataset(torch.zeros(64, 4)), batch_size=8, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    for epoch in range(args.epochs):
        for (x,) in loader:
            time.sleep(0.02)  # the step
        time.sleep(0.3)  # between epochs
        print(f"epoch {epoch} done")


if __name__ == "__main__":
    main()
