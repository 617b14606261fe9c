"""Records in one binary file, opened by the first read in the process that reads, as SQLite, HDF5 and tar files must
be: `if self.file is None: self.file = open(...)`. A handle shared across a fork would race on one offset (unseen
ad_3's tar read garbage), so this dataset refuses one opened by another process, where the others go wrong quietly."""
import argparse
import os
import tempfile
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, random_split

RECORD = 9 * 4  # eight features and a target, float32


class Records(Dataset):
    def __init__(self, path, n):
        self.path, self.n, self.file, self.pid = path, n, None, None
        self.scale = None  # set by the script once its loader is built: workers must keep it

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.file is None:
            self.file, self.pid = open(self.path, "rb"), os.getpid()
        if self.pid != os.getpid():
            raise RuntimeError(f"file opened by process {self.pid}, read by {os.getpid()}: one handle across a fork")
        self.file.seek(i * RECORD)
        record = np.frombuffer(self.file.read(RECORD), dtype=np.float32)
        time.sleep(0.001)
        return self.scale * torch.from_numpy(record[:8].copy()), torch.from_numpy(record[8:].copy())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--split", action="store_true", help="train on random_split's Subset of the records")
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.bin")
        n = 640 if args.split else 512
        np.random.default_rng(0).standard_normal((n, 9)).astype(np.float32).tofile(path)
        records = Records(path, n)
        data = random_split(records, [512, 128])[0] if args.split else records
        loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=args.workers)
        records.scale = 0.5
        model = nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for epoch in range(args.epochs):
            batches = 0
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                batches += 1
            print(f"epoch {epoch}: {batches} batches, loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
