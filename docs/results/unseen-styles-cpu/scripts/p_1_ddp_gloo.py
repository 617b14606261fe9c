"""DDP-ready script run as one process: torch.distributed (gloo, world size 1, rank 0, as `torchrun
--nproc_per_node=1` would set up), the model wrapped in DistributedDataParallel, a DistributedSampler with
set_epoch() each epoch, the loss all_reduce'd for logging, dist.barrier() at each epoch's end, rank-0-only prints
(the layout of many `train_ddp.py` scripts, e.g. the PyTorch DDP tutorial and ImageNet reference with --dist-url).

Data cost: real, ~0.5 ms of numpy augmentation per sample (random crop with padding, flip, jitter, normalize),
16-20 ms a batch of 32 in one process (~32 % of a step), against ~35 ms of compute a step (measured on the 2-core
machine). Default --workers 0. A correct advice: on a free 2-core machine one worker (what fits beside the main
process) should hide the loader (`num_workers = 1`, `--cpus-per-task = 2`); where a worker has no free core (a
loaded machine) 0 may measure as fast, and keeping 0 is then right. The edit should be `--workers N`.
Batches per epoch (48 for 1536 samples at world size 1) must match a plain run. The augmentation is seeded by
index and `dataset.epoch`, which the loop sets in the main process each epoch (fresh workers see it, persistent
ones do not): the losses match a plain run only if the tool's workers see the new epoch, and an edit that adds
persistent_workers=True silently freezes the augmentation at epoch 0 -- a correct report should not hide that."""
import argparse
import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class AugmentedCifarLike(Dataset):
    def __init__(self, n=1536, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
        self.labels = rng.integers(0, 10, size=n)
        self.mean = np.array([125.3, 123.0, 113.9], dtype=np.float32)
        self.std = np.array([63.0, 62.1, 66.7], dtype=np.float32)
        self.epoch = 0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx * 1000 + self.epoch)
        img = np.pad(self.images[idx], ((4, 4), (4, 4), (0, 0)), mode="reflect")
        y, x = rng.integers(0, 9, size=2)
        img = img[y:y + 32, x:x + 32].astype(np.float32)
        if rng.random() < 0.5:
            img = img[:, ::-1]
        for _ in range(6):  # a few jitter passes, as colour/contrast chains do
            img = np.clip(img * rng.uniform(0.9, 1.1) + rng.normal(0, 2.0, size=img.shape).astype(np.float32), 0, 255)
        img = (img - self.mean) / self.std
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(self.labels[idx])


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.block(x))
        x = F.adaptive_avg_pool2d(F.max_pool2d(x, 2), 1).flatten(1)
        return self.head(x)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_distributed():
    rank = int(os.environ.get("RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    return rank, world_size


def train_one_epoch(model, loader, sampler, optimizer, epoch, rank, world_size):
    model.train()
    sampler.set_epoch(epoch)
    loader.dataset.epoch = epoch
    running, seen = torch.zeros(2), 0
    for step, (images, targets) in enumerate(loader):
        output = model(images)
        loss = F.cross_entropy(output, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += torch.tensor([loss.item() * images.size(0), images.size(0)])
        seen += 1
    dist.all_reduce(running, op=dist.ReduceOp.SUM)
    dist.barrier()
    return (running[0] / running[1]).item(), seen


def main():
    parser = argparse.ArgumentParser(description="DDP training (one process is fine)")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32, help="per-process batch size")
    parser.add_argument("--workers", type=int, default=0, help="data loading workers per process")
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    rank, world_size = setup_distributed()
    torch.manual_seed(0)
    dataset = AugmentedCifarLike()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        pin_memory=False, drop_last=True)
    model = DDP(SmallResNet())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    t0 = time.time()
    for epoch in range(args.epochs):
        start = time.time()
        loss, batches = train_one_epoch(model, loader, sampler, optimizer, epoch, rank, world_size)
        if rank == 0:
            print(f"epoch {epoch} batches {batches} loss {loss:.4f} time {time.time() - start:.2f}s", flush=True)
    if rank == 0:
        print(f"total {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
