"""Images packed in ONE tar archive and read as a map-style Dataset (the "tar instead of a million small files"
layout of many cluster guides, before webdataset): __init__ lists the members once with tarfile.open() and closes
it; __getitem__ opens the archive lazily, `if self.tar is None: self.tar = tarfile.open(self.path)`, so each worker
process gets its own handle, then `self.tar.extractfile(member).read()` and PIL decodes the PNG. The archive
(class-dependent 48x48 RGB PNGs) is written first into a tempfile.TemporaryDirectory. torchvision transforms
(RandomCrop, RandomHorizontalFlip, ToTensor, Normalize), a small CNN, Adam, train/val split by member name."""
import argparse
import io
import os
import tarfile
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


def write_archive(path, n_train, n_val, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:48, 0:48]
    with tarfile.open(path, "w") as tar:
        for split, n in (("train", n_train), ("val", n_val)):
            for i in range(n):
                label = int(rng.integers(0, 8))
                stripes = np.sin((xx * np.cos(label * 0.39) + yy * np.sin(label * 0.39)) * 0.25 + rng.uniform(0, 6))
                img = np.stack([stripes, 0.8 * stripes, 0.6 * stripes], axis=-1)
                img = (img * 0.5 + 0.5) * 60 + 100 + rng.normal(0, 60, size=(48, 48, 3))
                buf = io.BytesIO()
                Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, format="PNG")
                info = tarfile.TarInfo(f"{split}/{i:06d}_{label}.png")
                info.size = buf.tell()
                buf.seek(0)
                tar.addfile(info, buf)


class TarImageDataset(Dataset):
    def __init__(self, tar_path, split, transform=None):
        self.tar_path = tar_path
        self.transform = transform
        self.tar = None  # opened lazily, so that every DataLoader worker has its own file handle
        with tarfile.open(tar_path) as tar:
            self.members = [m for m in tar.getmembers() if m.name.startswith(split + "/") and m.isfile()]
        self.targets = [int(os.path.splitext(m.name)[0].rsplit("_", 1)[1]) for m in self.members]

    def __len__(self):
        return len(self.members)

    def __getitem__(self, index):
        if self.tar is None:
            self.tar = tarfile.open(self.tar_path)
        data = self.tar.extractfile(self.members[index]).read()
        img = Image.open(io.BytesIO(data)).convert("RGB")
        if self.transform is not None:
            img = self.transform(img)
        return img, self.targets[index]


def make_model(num_classes=8):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, num_classes))


def train_one_epoch(model, loader, criterion, optimizer, epoch):
    model.train()
    total_loss, n = 0.0, 0
    for i, (inputs, targets) in enumerate(loader):
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * inputs.size(0)
        n += inputs.size(0)
    return total_loss / n, i + 1


@torch.no_grad()
def validate(model, loader):
    model.eval()
    correct = total = 0
    for inputs, targets in loader:
        correct += (model(inputs).argmax(1) == targets).sum().item()
        total += targets.size(0)
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("-b", "--batch-size", type=int, default=64)
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--n-train", type=int, default=5000)
    args = parser.parse_args()
    torch.manual_seed(0)

    normalize = transforms.Normalize(mean=[0.5, 0.5, 0.5], std=[0.25, 0.25, 0.25])
    train_tf = transforms.Compose([transforms.RandomCrop(40), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                                   normalize])
    val_tf = transforms.Compose([transforms.CenterCrop(40), transforms.ToTensor(), normalize])

    with tempfile.TemporaryDirectory() as tmp:
        tar_path = os.path.join(tmp, "images.tar")
        t0 = time.time()
        write_archive(tar_path, args.n_train, 800)
        print(f"wrote {tar_path} ({os.path.getsize(tar_path) / 1e6:.1f} MB) in {time.time() - t0:.1f}s", flush=True)

        train_set = TarImageDataset(tar_path, "train", train_tf)
        val_set = TarImageDataset(tar_path, "val", val_tf)
        train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
        val_loader = DataLoader(val_set, batch_size=256, shuffle=False, num_workers=args.workers)

        model = make_model()
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        for epoch in range(args.epochs):
            t0 = time.time()
            loss, batches = train_one_epoch(model, train_loader, criterion, optimizer, epoch)
            acc = validate(model, val_loader)
            print(f"Epoch {epoch}: {batches} batches, loss {loss:.4f}, val acc {acc:.3f} ({time.time() - t0:.1f}s)",
                  flush=True)


if __name__ == "__main__":
    main()
