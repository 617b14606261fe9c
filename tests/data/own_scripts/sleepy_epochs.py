"""A slow loader over several epochs, written as a small Trainer class (reads 'files' by sleeping).

Each item waits `--item-ms` as a read from a slow disk would, so the loop waits for data and more
DataLoader workers help even on two cores. Every epoch prints how many batches it saw and a digest
of the sample order, so a caller can check that a profiled run trained on the same batches.
"""
import argparse
import atexit
import hashlib
import multiprocessing
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class SlowFiles(Dataset):
    def __init__(self, n, item_ms, worker_mb=0):
        self.n, self.item_s, self.worker_mb, self.cache = n, item_ms / 1e3, worker_mb, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.cache is None and self.worker_mb and get_worker_info():  # a cache each worker fills for itself
            self.cache = torch.ones(self.worker_mb * 2**18)
        time.sleep(self.item_s)
        return torch.full((16,), float(i % 7)), i


class Trainer:
    def __init__(self, opts):
        self.opts = opts
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 7))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.01)

    def fit(self, loader):
        most = 0
        for epoch in range(self.opts.epochs):
            seen, digest = 0, hashlib.sha1()
            for x, idx in loader:
                loss = nn.functional.cross_entropy(self.net(x), idx % 7)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                seen += 1
                digest.update(idx.numpy().tobytes())
                most = max(most, len(multiprocessing.active_children()))
            print(f"epoch {epoch} batches {seen} order {digest.hexdigest()[:12]}", flush=True)
        print(f"most workers alive at once {most}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--items", type=int, default=256)
    ap.add_argument("--item-ms", type=float, default=2.0)
    ap.add_argument("-b", "--batch", type=int, default=8)
    ap.add_argument("--worker-mb", type=int, default=0, help="each worker fills a cache of this many MB")
    ap.add_argument("--children-at-exit", action="store_true", help="print how many worker processes outlive the script")
    opts = ap.parse_args()
    if opts.children_at_exit:  # registered before any loader: runs after the handlers that later code registers
        atexit.register(lambda: print(f"children at exit {len(multiprocessing.active_children())}", flush=True))
    torch.manual_seed(0)
    Trainer(opts).fit(DataLoader(SlowFiles(opts.items, opts.item_ms, opts.worker_mb), batch_size=opts.batch, shuffle=True))
