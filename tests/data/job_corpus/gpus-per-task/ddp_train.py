import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def loader_for(dataset):
    # one core stays with the training loop, one with the pin-memory thread
    workers = max(len(os.sched_getaffinity(0)) - 2, 0)
    return DataLoader(dataset, batch_size=128, sampler=DistributedSampler(dataset),
                      num_workers=workers, pin_memory=True)


def main():
    dist.init_process_group("nccl", rank=int(os.environ["SLURM_PROCID"]),
                            world_size=int(os.environ["SLURM_NTASKS"]))
    torch.cuda.set_device(int(os.environ["SLURM_LOCALID"]))
    ds = TensorDataset(torch.randn(4096, 512), torch.randint(0, 2, (4096,)))
    for x, y in loader_for(ds):
        pass


if __name__ == "__main__":
    main()
