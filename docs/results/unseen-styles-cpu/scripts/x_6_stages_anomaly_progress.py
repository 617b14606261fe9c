"""Pipeline-parallel-ready style (GPipe/torchgpipe-minded code run on one device): the model is a list of
`nn.Sequential` STAGES called one by one in the training loop (`for stage in stages: h = stage(h)`), the whole run
under `torch.autograd.set_detect_anomaly(True)` (left on from debugging), and a hand-written progress line
`print(f"\\r{i + 1}/{len(loader)} loss {loss:.3f}", end="", flush=True)` per batch. The worker count comes from a
platform test common in tutorials: `NUM_WORKERS = 0 if sys.platform == "win32" else 2`.

A correct report: the loop is train_epoch()'s `for i, (x, y) in enumerate(loader):`; 3 epochs of 25 batches (800
items, batch 32); the count is 2 on Linux from the `NUM_WORKERS = ... else 2` line (edit the `2` there; no flag).
Note that anomaly detection makes the step itself slow, which a correct report should attribute to the step.
"""
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

NUM_WORKERS = 0 if sys.platform == "win32" else 2
BATCH_SIZE = 32
EPOCHS = 3


class Patches(Dataset):
    def __init__(self, n=800):
        self.y = np.random.default_rng(7).integers(0, 3, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = int(self.y[i])
        img = g.standard_normal((24, 24)).astype(np.float32)
        img[:, :: (y + 2)] += 1.5
        k = np.outer(np.hanning(5), np.hanning(5))
        img = np.real(np.fft.ifft2(np.fft.fft2(img) * np.fft.fft2(k, img.shape))).astype(np.float32)
        time.sleep(0.003)
        return torch.from_numpy(img)[None], y


def make_stages():
    return [
        nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Flatten(), nn.Linear(32 * 6 * 6, 64), nn.ReLU(), nn.Linear(64, 3)),
    ]


def train_epoch(stages, loader, opt):
    tot = 0.0
    for i, (x, y) in enumerate(loader):
        h = x
        for stage in stages:
            h = stage(h)
        loss = F.cross_entropy(h, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
        print(f"\r{i + 1}/{len(loader)} loss {loss.item():.3f}", end="", flush=True)
    print()
    return tot / (i + 1), i + 1


def main():
    torch.manual_seed(0)
    loader = DataLoader(Patches(), batch_size=BATCH_SIZE, shuffle=True, num_workers=NUM_WORKERS)
    stages = make_stages()
    params = [p for s in stages for p in s.parameters()]
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    print(f"NUM_WORKERS={NUM_WORKERS}")
    with torch.autograd.set_detect_anomaly(True):
        for epoch in range(EPOCHS):
            loss, nb = train_epoch(stages, loader, opt)
            print(f"epoch {epoch} loss {loss:.4f} ({nb} batches)")


if __name__ == "__main__":
    main()
