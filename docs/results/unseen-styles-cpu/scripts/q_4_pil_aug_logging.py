"""Image classification with heavy PIL augmentation (RandomResizedCrop, ColorJitter) so workers matter; the loader is
tuned as guides say (pin_memory, prefetch_factor=4, persistent workers, non_blocking copies); the loop logs with
`logging` every N steps and times itself with time.perf_counter()."""
import argparse
import logging
import time

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

log = logging.getLogger("train")


class SyntheticPhotos(Dataset):
    """96x96 RGB PIL images of coloured blobs (made once, kept as uint8 arrays); the class is the blob's colour."""

    def __init__(self, n=3000, size=96, seed=0, transform=None):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 5, n)
        palette = np.array([[220, 40, 40], [40, 200, 40], [40, 40, 220], [220, 220, 40], [200, 40, 200]])
        yy, xx = np.mgrid[:size, :size]
        self.images = []
        for y in self.labels:
            cx, cy, r = rng.integers(20, size - 20, 2).tolist() + [int(rng.integers(10, 25))]
            img = rng.integers(0, 90, (size, size, 3))
            img[(xx - cx) ** 2 + (yy - cy) ** 2 < r * r] = palette[y]
            self.images.append(img.astype(np.uint8))
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = Image.fromarray(self.images[i])
        return self.transform(img), int(self.labels[i])


def make_model():
    return nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 5))


def train(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tf = transforms.Compose([
        transforms.RandomResizedCrop(64, scale=(0.5, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(0.4, 0.4, 0.4, 0.1),
        transforms.ToTensor(),
        transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
    ])
    dataset = SyntheticPhotos(transform=tf)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        pin_memory=torch.cuda.is_available(), prefetch_factor=4 if args.workers > 0 else None,
                        persistent_workers=args.workers > 0, drop_last=True)
    model = make_model().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    for epoch in range(args.epochs):
        model.train()
        epoch_start = window_start = time.perf_counter()
        total = 0.0
        for step, (images, targets) in enumerate(loader, start=1):
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            output = model(images)
            loss = criterion(output, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if step % args.log_every == 0:
                now = time.perf_counter()
                log.info("epoch %d step %d/%d loss %.4f %.1f ms/step", epoch, step, len(loader), loss.item(),
                         1000 * (now - window_start) / args.log_every)
                window_start = now
        log.info("epoch %d done: loss %.4f batches %d time %.1fs", epoch, total / step, step,
                 time.perf_counter() - epoch_start)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    train(args)
    log.info("total %.1fs", time.perf_counter() - start)
