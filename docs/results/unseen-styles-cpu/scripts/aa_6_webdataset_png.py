"""Training from WebDataset tar shards with the real `webdataset` library: the shards (PNG image + class per
sample) are written once with wds.ShardWriter into a temporary folder, then read by the usual fluent pipeline
WebDataset(urls).shuffle().decode("pil").to_tuple("png", "cls").map_tuple(transform, identity).batched(B), batched
inside the pipeline, so the loader is wds.WebLoader(dataset, batch_size=None, num_workers=...). Shards are split
between workers by the library, so each worker reads whole shards."""
import argparse
import glob
import io
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import webdataset as wds
from PIL import Image
from torchvision import transforms

SHARD_DIR = os.path.join(tempfile.gettempdir(), "aa6_shards")


def write_shards(n_samples, per_shard, size=64, seed=0):
    """Four classes of blobs on noise, stored as PNG in tar shards (done once)."""
    if len(glob.glob(os.path.join(SHARD_DIR, "train-*.tar"))) == -(-n_samples // per_shard):
        return
    os.makedirs(SHARD_DIR, exist_ok=True)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size]
    with wds.ShardWriter(os.path.join(SHARD_DIR, "train-%04d.tar"), maxcount=per_shard, verbose=0) as sink:
        for i in range(n_samples):
            cls = int(rng.integers(0, 4))
            img = rng.integers(0, 90, (size, size, 3)).astype(np.uint8)
            cx, cy = rng.integers(16, size - 16, 2)
            r = 6 + 3 * cls
            img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = (200, 60 + 40 * cls, 255 - 50 * cls)
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, format="PNG")
            sink.write({"__key__": f"{i:06d}", "png": buf.getvalue(), "cls": str(cls).encode()})


def identity(x):
    return x


def build_loader(batch_size, workers):
    urls = sorted(glob.glob(os.path.join(SHARD_DIR, "train-*.tar")))
    transform = transforms.Compose([
        transforms.RandomResizedCrop(48, scale=(0.6, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(0.2, 0.2),
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)),
    ])
    dataset = (
        wds.WebDataset(urls, shardshuffle=len(urls))
        .shuffle(500)
        .decode("pil")
        .to_tuple("png", "cls")
        .map_tuple(transform, identity)
        .batched(batch_size)
    )
    return wds.WebLoader(dataset, batch_size=None, shuffle=False, num_workers=workers)


class SmallCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.c1 = nn.Conv2d(3, 24, 3, padding=1)
        self.c2 = nn.Conv2d(24, 48, 3, padding=1)
        self.fc = nn.Linear(48 * 12 * 12, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--per-shard", type=int, default=250)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()

    torch.manual_seed(0)
    write_shards(args.samples, args.per_shard)
    loader = build_loader(args.batch_size, args.workers)
    model = SmallCNN()
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        t0 = time.time()
        losses, seen = [], 0
        for images, labels in loader:
            labels = torch.as_tensor(labels)
            loss = F.cross_entropy(model(images), labels)
            optim.zero_grad()
            loss.backward()
            optim.step()
            losses.append(loss.item())
            seen += len(labels)
        print(f"epoch {epoch}: {len(losses)} batches, {seen} samples, loss {np.mean(losses):.4f}, "
              f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
