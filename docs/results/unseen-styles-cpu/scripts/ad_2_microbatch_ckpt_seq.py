"""Large effective batch on little memory, as in many "train big batches on a small GPU" recipes: the loader hands
over a batch of --batch-size images, the step splits it with `images.split(args.micro_batch)` and runs forward and
backward per micro-batch (each loss scaled by its share of the batch, gradients accumulating), then clips and steps
once; the conv trunk is an nn.Sequential run through `torch.utils.checkpoint.checkpoint_sequential(...,
use_reentrant=False)` so only segment boundaries keep activations. Synthetic 3x40x40 images (a class-dependent
blob pattern), random 32x32 crop + horizontal flip per item in numpy; SGD with nesterov momentum and a cosine LR
stepped per optimizer step; validation accuracy per epoch."""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential
from torch.utils.data import DataLoader, Dataset


class BlobImages(Dataset):
    def __init__(self, n, train=True, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 10, size=n)
        yy, xx = np.mgrid[0:40, 0:40].astype(np.float32)
        imgs = np.empty((n, 3, 40, 40), dtype=np.uint8)
        for i, c in enumerate(self.labels):
            cy, cx = 8 + 3 * (c % 5) + rng.normal(0, 2), 8 + 6 * (c // 5) + rng.normal(0, 2)
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (20 + 4 * (c % 3)))
            img = blob[None] * np.array([1.0, 0.5 + 0.05 * c, 1.0 - 0.08 * c])[:, None, None]
            img = img + rng.normal(0, 0.35, size=(3, 40, 40))
            imgs[i] = np.clip(img * 180 + 40, 0, 255).astype(np.uint8)
        self.images = imgs
        self.train = train
        self.mean = np.array([0.35, 0.30, 0.28], dtype=np.float32)[:, None, None]
        self.std = np.array([0.25, 0.25, 0.25], dtype=np.float32)[:, None, None]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        img = self.images[idx]
        if self.train:
            top, left = np.random.randint(0, 9, size=2)
            img = img[:, top:top + 32, left:left + 32]
            if np.random.rand() < 0.5:
                img = img[:, :, ::-1]
        else:
            img = img[:, 4:36, 4:36]
        x = (img.astype(np.float32) / 255.0 - self.mean) / self.std
        return torch.from_numpy(np.ascontiguousarray(x)), int(self.labels[idx])


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Net(nn.Module):
    def __init__(self, width=24, segments=3, num_classes=10):
        super().__init__()
        self.segments = segments
        self.features = nn.Sequential(
            conv_bn(3, width), conv_bn(width, width),
            conv_bn(width, 2 * width, 2), conv_bn(2 * width, 2 * width),
            conv_bn(2 * width, 4 * width, 2), conv_bn(4 * width, 4 * width),
        )
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x):
        if self.training and torch.is_grad_enabled():
            x = checkpoint_sequential(self.features, self.segments, x, use_reentrant=False)
        else:
            x = self.features(x)
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += labels.numel()
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64, help="effective batch per optimizer step")
    parser.add_argument("--micro-batch", type=int, default=16, help="images per forward/backward")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--train-size", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    train_set = BlobImages(args.train_size, train=True, seed=args.seed)
    val_set = BlobImages(512, train=False, seed=args.seed + 1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True,
                              num_workers=args.num_workers)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=args.num_workers)

    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    total_steps = args.epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * s / total_steps)))

    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        running, seen = 0.0, 0
        for step, (images, labels) in enumerate(train_loader):
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0
            for micro_images, micro_labels in zip(images.split(args.micro_batch), labels.split(args.micro_batch)):
                logits = model(micro_images)
                loss = criterion(logits, micro_labels) * (micro_images.size(0) / images.size(0))
                loss.backward()
                step_loss += loss.item()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            optimizer.step()
            scheduler.step()
            running += step_loss * images.size(0)
            seen += images.size(0)
        acc = evaluate(model, val_loader)
        print(f"epoch {epoch + 1}/{args.epochs}  steps {step + 1}  train_loss {running / seen:.4f}  "
              f"val_acc {acc:.3f}  lr {scheduler.get_last_lr()[0]:.4f}  {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
