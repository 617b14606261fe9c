"""A dataset of many small .npy files (one per sample, as after a preprocessing step), written first into a
`tempfile.TemporaryDirectory()` that main() holds open while it trains; a file-list Dataset that `np.load`s each item
and normalises it. The worker count is an argparse option whose default is half the machine's cores,
`--workers type=int default=os.cpu_count() // 2` (1 here, 32 on a 64-core node), and the loader is written for a GPU
too: `pin_memory=torch.cuda.is_available()`, `persistent_workers=args.workers > 0`, batches moved with
`.to(device, non_blocking=True)`. The step clips gradients and steps a linear-warm-up LambdaLR every batch.

A correct report: the loop is train_one_epoch()'s; each of the 4 epochs keeps 64 batches; the edit is
`--workers N` (and since the default counts the node's cores, the job should pass it even where the count stays).
"""
import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def get_args():
    p = argparse.ArgumentParser(description="MLP on per-sample .npy files")
    p.add_argument("--workers", type=int, default=os.cpu_count() // 2, help="data loading workers (default: half the cores)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=48)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=50, help="warm-up steps")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--n-files", type=int, default=3072)
    return p.parse_args()


def write_shards(root: Path, n: int, dim: int = 1024) -> list[Path]:
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((8, dim)).astype(np.float32)
    paths = []
    for i in range(n):
        label = i % 8
        x = centers[label] + rng.standard_normal(dim).astype(np.float32) * 8.0
        path = root / f"{label}" / f"sample_{i:06d}.npy"
        path.parent.mkdir(exist_ok=True)
        np.save(path, x)
        paths.append(path)
    return paths


class NpyFiles(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        path = self.files[idx]
        x = np.load(path)
        spec = np.abs(np.fft.rfft(x.reshape(16, 64), axis=1))  # a little feature work per item
        for _ in range(60):
            spec = np.sqrt(spec + 1e-3) * np.log1p(spec)
        x = np.concatenate([x, spec.ravel()]).astype(np.float32)
        x = (x - x.mean()) / (x.std() + 1e-6)
        return torch.from_numpy(x), int(path.parent.name)


def train_one_epoch(model, loader, optimizer, scheduler, device, clip):
    model.train()
    total, seen = 0.0, 0
    for images, target in loader:
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        output = model(images)
        loss = F.cross_entropy(output, target)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        scheduler.step()
        total += loss.item() * images.size(0)
        seen += images.size(0)
    return total / seen, seen // loader.batch_size


def main():
    args = get_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="npy_shards_") as tmp:
        files = write_shards(Path(tmp), args.n_files)
        train_set = NpyFiles(files)
        train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True,
                                  num_workers=args.workers, pin_memory=torch.cuda.is_available(),
                                  persistent_workers=args.workers > 0)
        model = nn.Sequential(nn.Linear(1024 + 16 * 33, 2048), nn.GELU(), nn.Linear(2048, 512), nn.GELU(),
                              nn.Linear(512, 8)).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / args.warmup))
        print(f"{len(train_set)} files, {len(train_loader)} batches an epoch, {args.workers} workers")
        for epoch in range(args.epochs):
            t0 = time.time()
            loss, batches = train_one_epoch(model, train_loader, optimizer, scheduler, device, args.clip)
            print(f"Epoch {epoch}: loss {loss:.4f} batches {batches} lr {scheduler.get_last_lr()[0]:.2e} "
                  f"time {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
