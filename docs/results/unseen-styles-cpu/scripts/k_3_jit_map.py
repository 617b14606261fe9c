"""A TorchScript model (`torch.jit.script`), batches moved with `for x, y in map(to_device, loader)`, and flags read
with `parse_known_args()` so that launcher-added arguments are tolerated (only warned about)."""
import argparse
import functools

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class ShapesDataset(Dataset):
    """24x24 grey images of one of 3 shapes: drawn at 3x, flipped, noised, box-blurred in numpy, then downsampled."""

    def __init__(self, n, seed=0):
        rng = np.random.RandomState(seed)
        self.labels = rng.randint(0, 3, size=n)
        self.centres = rng.randint(8, 16, size=(n, 2))
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        label = int(self.labels[index])
        cy, cx = self.centres[index] * 3
        yy, xx = np.mgrid[0:72, 0:72]
        if label == 0:
            img = ((yy - cy) ** 2 + (xx - cx) ** 2 < 270).astype(np.float32)
        elif label == 1:
            img = ((abs(yy - cy) < 15) & (abs(xx - cx) < 15)).astype(np.float32)
        else:
            img = ((abs(yy - cy) + abs(xx - cx)) < 18).astype(np.float32)
        if np.random.rand() < 0.5:
            img = img[:, ::-1]
        img = img + np.random.normal(0, 0.6, img.shape).astype(np.float32)
        for _ in range(12):  # box blur, separable, done row/column-wise the plain way
            img = (np.roll(img, 1, 0) + img + np.roll(img, -1, 0)) / 3.0
            img = (np.roll(img, 1, 1) + img + np.roll(img, -1, 1)) / 3.0
        img = img.reshape(24, 3, 24, 3).mean(axis=(1, 3))
        img = (img - img.mean()) / (img.std() + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)).unsqueeze(0), label


class ConvNet(nn.Module):
    def __init__(self, n_cls: int = 3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32 * 6 * 6, n_cls)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(torch.flatten(x, 1))


def to_device(batch, device):
    images, targets = batch
    return images.to(device, non_blocking=True), targets.to(device, non_blocking=True)


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    total, count = 0.0, 0
    for images, targets in map(functools.partial(to_device, device=device), loader):
        logits = model(images)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        count += 1
    return total / count, count


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num_workers", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--train-samples", type=int, default=6400)
    args, unknown = parser.parse_known_args()
    if unknown:
        print(f"ignoring unknown arguments: {unknown}")
    return args


def main():
    args = get_args()
    torch.manual_seed(0)
    np.random.seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(ShapesDataset(args.train_samples), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, pin_memory=device.type == "cuda")
    model = torch.jit.script(ConvNet().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        loss, count = train_one_epoch(model, train_loader, optimizer, device)
        print(f"epoch {epoch}: loss={loss:.4f} batches={count}", flush=True)


if __name__ == "__main__":
    main()
