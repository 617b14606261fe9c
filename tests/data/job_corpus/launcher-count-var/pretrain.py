import argparse
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=100)
    args = p.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    patches = TensorDataset(torch.randn(4096, 3, 64, 64))
    sampler = DistributedSampler(patches)
    loader = DataLoader(patches, batch_size=64, sampler=sampler, num_workers=4, pin_memory=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            pass
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
