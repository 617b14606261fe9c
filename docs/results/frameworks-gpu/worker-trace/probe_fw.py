"""Do DataLoader workers trace? The loop runs in an installed trainer (site-packages/fw.py) called from module
level; each worker prints the tracer it sees inside the profiled __getitem__ once."""
import os, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

seen = set()

def busy(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total

class Items(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        pid = os.getpid()
        if pid not in seen:
            seen.add(pid)
            print(f"worker {pid}: tracer inside __getitem__: {sys.gettrace()!r}", flush=True)
        busy(2000)
        return torch.zeros(4), i % 3

def make_loader():
    loader = DataLoader(Items(), batch_size=16, num_workers=2, shuffle=True)
    return loader

if __name__ == "__main__":
    import fw
    fw.fit(make_loader())
