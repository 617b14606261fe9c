"""YOLOv5/ultralytics style worker sizing: `--workers` (default 8, "max dataloader workers") is only a ceiling; the
loader is built by `create_dataloader(...)`, which computes
`nw = min([os.cpu_count() // max(nd, 1), batch_size if batch_size > 1 else 0, workers])` and passes
`num_workers=nw`. With 2 CPUs and no GPU (nd = 0) this gives nw = 2. Training loop: `pbar = enumerate(train_loader)`
then `for i, (imgs, targets) in pbar:` inside train(); a warm-up of the lr over the first `nw_iters` iterations;
mosaic-like numpy augmentation per item.

A correct report: the loop is train()'s `for i, (imgs, targets) in pbar:`; 3 epochs of 30 batches (960 items,
batch 32); the count is computed in create_dataloader's `nw = min(...)` from os.cpu_count() and `--workers 8`;
an edit of `--workers N` only takes effect when N <= os.cpu_count() (the min() clamps it; os.cpu_count() counts the
node's CPUs and ignores the Slurm affinity mask), so a report advising N above the clamp must say the min() line
has to change too; `--workers 8` is the default and already a no-op above 2 here.
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class LoadImagesAndLabels(Dataset):
    def __init__(self, n=960, img_size=32, augment=True):
        g = np.random.default_rng(0)
        self.boxes = g.uniform(4, 28, size=(n, 2))
        self.labels = g.integers(0, 3, size=n)
        self.img_size, self.augment = img_size, augment

    def __len__(self):
        return len(self.labels)

    def load_image(self, i):
        yy, xx = np.mgrid[0:self.img_size, 0:self.img_size]
        cy, cx = self.boxes[i]
        r = 2 + 2 * self.labels[i]
        im = (np.abs(yy - cy) < r) & (np.abs(xx - cx) < r)
        im = np.stack([im, im.T, im]).astype(np.float32)
        time.sleep(0.002)  # cv2.imread stand-in
        return im

    def __getitem__(self, index):
        im = self.load_image(index)
        if self.augment:
            # mosaic-ish: blend with 3 random other images, HSV-ish jitter
            others = np.random.randint(0, len(self), 3)
            im = 0.7 * im + 0.1 * sum(self.load_image(j) for j in others)
            im = im * np.random.uniform(0.8, 1.2, size=(3, 1, 1)) + 0.1 * np.random.randn(*im.shape)
            if np.random.rand() < 0.5:
                im = im[:, :, ::-1]
        return torch.from_numpy(np.ascontiguousarray(im, dtype=np.float32)), int(self.labels[index])


def create_dataloader(dataset, batch_size, workers=8, shuffle=False):
    nd = torch.cuda.device_count()  # number of CUDA devices
    nw = min([os.cpu_count() // max(nd, 1), batch_size if batch_size > 1 else 0, workers])  # number of workers
    print(f"create_dataloader: using {nw} workers (cpu_count={os.cpu_count()}, --workers={workers})")
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=nw,
                        pin_memory=nd > 0, drop_last=False)
    return loader, dataset


def train(opt):
    torch.manual_seed(0)
    np.random.seed(0)
    train_loader, dataset = create_dataloader(LoadImagesAndLabels(), opt.batch_size, workers=opt.workers,
                                              shuffle=True)
    nb = len(train_loader)  # number of batches
    nw_iters = max(round(opt.warmup_epochs * nb), 10)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.SiLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.SiLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=opt.lr, momentum=0.9, nesterov=True)
    for epoch in range(opt.epochs):
        model.train()
        mloss = 0.0
        t0 = time.time()
        pbar = enumerate(train_loader)
        for i, (imgs, targets) in pbar:
            ni = i + nb * epoch  # number integrated batches (since train start)
            if ni <= nw_iters:
                for g in optimizer.param_groups:
                    g['lr'] = np.interp(ni, [0, nw_iters], [0.0, opt.lr])
            loss = F.cross_entropy(model(imgs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            mloss = (mloss * i + loss.item()) / (i + 1)  # update mean losses
        print(f"{epoch}/{opt.epochs - 1} loss {mloss:.4f} batches {i + 1}/{nb} "
              f"workers {train_loader.num_workers} {time.time() - t0:.1f}s")


def parse_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--batch-size', type=int, default=32, help='total batch size for all GPUs')
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--warmup-epochs', type=float, default=0.5)
    parser.add_argument('--workers', type=int, default=8, help='max dataloader workers (per RANK in DDP mode)')
    return parser.parse_args()


if __name__ == "__main__":
    train(parse_opt())
