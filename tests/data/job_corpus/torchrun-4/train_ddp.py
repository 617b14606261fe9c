import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--loader-workers", type=int, default=10, help="workers per GPU process")
    return p.parse_args()


def main():
    args = get_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    data = TensorDataset(torch.randn(8192, 3, 64, 64), torch.randint(0, 100, (8192,)))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=64, sampler=sampler, num_workers=args.loader_workers,
                        pin_memory=True, persistent_workers=True)
    model = DDP(torch.nn.Linear(3 * 64 * 64, 100).cuda(), device_ids=[local_rank])
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            model(x.cuda().flatten(1)).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
