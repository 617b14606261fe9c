"""SimCLR-style contrastive pre-training (as in sthalles/SimCLR and many self-supervised repos): the dataset
returns TWO augmented views of each image, built by a `ContrastiveLearningViewGenerator` around a numpy
augmentation chain (random resized crop, horizontal flip, colour jitter, random grayscale, Gaussian blur by
separable convolution); an encoder with a projection head; the NT-Xent (InfoNCE) loss over 2N views;
`-j/--workers` (default 2, more than 2 CPUs hold beside the main process), `drop_last=True`,
`persistent_workers` not set, a cosine schedule stepped per epoch.

Data cost: real, ~1.2 ms of numpy per sample (two views), ~40 ms a batch of 32 in one process, against ~100 ms
of compute a step (64 images through the encoder; measured on the 2-core machine). A correct advice on 2 CPUs: one
worker (what fits beside the main process) keeps up, so `num_workers = 1`, `--cpus-per-task = 2` (or keep 2 if
measured faster), with a warning that 2 workers are more than 2 CPUs hold beside the main process. The edit should be
`--workers N` (or `-j N`). Augmentation draws from numpy's global RNG in each worker (no worker_init_fn), so the
losses differ between runs with workers: compare batches per epoch, not losses."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def random_resized_crop(img, size, rng):
    h, w, _ = img.shape
    scale = rng.uniform(0.3, 1.0)
    ch, cw = max(4, int(h * np.sqrt(scale))), max(4, int(w * np.sqrt(scale)))
    y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
    crop = img[y:y + ch, x:x + cw]
    yi = (np.arange(size) * ch / size).astype(int)
    xi = (np.arange(size) * cw / size).astype(int)
    return crop[yi][:, xi]


def color_jitter(img, rng, s=0.5):
    img = img * rng.uniform(1 - 0.8 * s, 1 + 0.8 * s)
    mean = img.mean()
    img = (img - mean) * rng.uniform(1 - 0.8 * s, 1 + 0.8 * s) + mean
    gray = img.mean(axis=2, keepdims=True)
    img = (img - gray) * rng.uniform(1 - 0.8 * s, 1 + 0.8 * s) + gray
    return np.clip(img, 0.0, 1.0)


def gaussian_blur(img, rng):
    sigma = rng.uniform(0.1, 2.0)
    k = np.exp(-0.5 * (np.arange(-4, 5) / sigma) ** 2)
    k /= k.sum()
    out = np.empty_like(img)
    for c in range(img.shape[2]):
        rows = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 1, img[:, :, c])
        out[:, :, c] = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 0, rows)
    return out


class SimCLRTransform:
    def __init__(self, size=32):
        self.size = size

    def __call__(self, img):
        rng = np.random  # global numpy RNG, as torchvision-on-numpy pipelines often use
        rng = np.random.default_rng(rng.randint(0, 2**31))
        v = random_resized_crop(img, self.size, rng)
        if rng.random() < 0.5:
            v = v[:, ::-1]
        if rng.random() < 0.8:
            v = color_jitter(v, rng)
        if rng.random() < 0.2:
            v = np.repeat(v.mean(axis=2, keepdims=True), 3, axis=2)
        if rng.random() < 0.5:
            v = gaussian_blur(v, rng)
        return torch.from_numpy(np.ascontiguousarray(v.transpose(2, 0, 1), dtype=np.float32))


class ContrastiveLearningViewGenerator:
    def __init__(self, base_transform, n_views=2):
        self.base_transform = base_transform
        self.n_views = n_views

    def __call__(self, x):
        return [self.base_transform(x) for _ in range(self.n_views)]


class UnlabelledImages(Dataset):
    def __init__(self, n=1024, transform=None):
        rng = np.random.default_rng(0)
        self.images = rng.random((n, 40, 40, 3), dtype=np.float32)
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return self.transform(self.images[idx]), -1


class ResNetSimCLR(nn.Module):
    def __init__(self, out_dim=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.projector = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, out_dim))

    def forward(self, x):
        return self.projector(self.backbone(x))


def info_nce_loss(features, batch_size, n_views=2, temperature=0.07):
    labels = torch.cat([torch.arange(batch_size) for _ in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity = features @ features.T
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity = similarity[~mask].view(similarity.shape[0], -1)
    positives = similarity[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity[~labels.bool()].view(similarity.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    targets = torch.zeros(logits.shape[0], dtype=torch.long)
    return logits, targets


class SimCLR:
    def __init__(self, model, optimizer, scheduler, args):
        self.model, self.optimizer, self.scheduler, self.args = model, optimizer, scheduler, args
        self.criterion = nn.CrossEntropyLoss()

    def train(self, train_loader):
        for epoch_counter in range(self.args.epochs):
            start, total, n_iter = time.time(), 0.0, 0
            for images, _ in train_loader:
                images = torch.cat(images, dim=0)
                features = self.model(images)
                logits, labels = info_nce_loss(features, self.args.batch_size)
                loss = self.criterion(logits, labels)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
                n_iter += 1
            self.scheduler.step()
            print(f"Epoch: {epoch_counter}\tbatches: {n_iter}\tLoss: {total / n_iter:.4f}\t"
                  f"time {time.time() - start:.2f}s", flush=True)


def main():
    parser = argparse.ArgumentParser(description="PyTorch SimCLR")
    parser.add_argument("-j", "--workers", default=2, type=int, metavar="N", help="number of data loading workers")
    parser.add_argument("--epochs", default=6, type=int)
    parser.add_argument("-b", "--batch-size", default=32, type=int)
    parser.add_argument("--lr", default=0.0003, type=float)
    parser.add_argument("--seed", default=0, type=int)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    dataset = UnlabelledImages(transform=ContrastiveLearningViewGenerator(SimCLRTransform(32), 2))
    train_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                              pin_memory=True, drop_last=True)
    model = ResNetSimCLR()
    optimizer = torch.optim.Adam(model.parameters(), args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    SimCLR(model, optimizer, scheduler, args).train(train_loader)


if __name__ == "__main__":
    main()
