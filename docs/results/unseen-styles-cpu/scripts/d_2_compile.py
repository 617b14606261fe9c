"""Small conv net wrapped in torch.compile (PyTorch 2.x style), with the usual try/except fallback to eager."""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticShapes(Dataset):
    """32x32 RGB images of one of 10 frequency patterns; random crop/flip/jitter per item, as torchvision transforms."""

    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.phase = torch.rand(n, generator=g) * 2 * math.pi
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        label = int(self.labels[idx])
        coords = torch.linspace(0, 1, 36)
        yy, xx = torch.meshgrid(coords, coords, indexing="ij")
        freq = 1 + label
        img = torch.stack([torch.sin(freq * 6.28 * xx + self.phase[idx]),
                           torch.cos(freq * 6.28 * yy + self.phase[idx]),
                           torch.sin(freq * 3.14 * (xx + yy))])
        # "RandomCrop(32)" + "RandomHorizontalFlip" + "ColorJitter"-ish, deterministic from the index
        g = torch.Generator().manual_seed(idx)
        i, j = torch.randint(0, 5, (2,), generator=g).tolist()
        img = img[:, i:i + 32, j:j + 32]
        if torch.rand(1, generator=g).item() < 0.5:
            img = img.flip(-1)
        img = img * (0.8 + 0.4 * torch.rand(3, 1, 1, generator=g)) + 0.3 * torch.randn(3, 32, 32, generator=g)
        img = (img - img.mean()) / (img.std() + 1e-5)
        return img, label


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.relu(self.conv3(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def train_one_epoch(model, loader, optimizer, criterion, device):
    model.train()
    running, n = 0.0, 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        optimizer.zero_grad(set_to_none=True)
        outputs = model(images)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running += loss.item()
        n += 1
    return running / n, n


def main():
    parser = argparse.ArgumentParser(description="torch.compile CIFAR-like example")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = SyntheticShapes(args.samples, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        drop_last=True)
    model = Net().to(device)
    if not args.no_compile:
        try:
            t0 = time.time()
            model = torch.compile(model)
            print(f"compiled model with torch.compile ({time.time() - t0:.2f}s to wrap)", flush=True)
        except Exception as e:  # older torch, no compiler, ...
            print(f"torch.compile unavailable ({e}); running eagerly", flush=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        t0 = time.time()
        loss, batches = train_one_epoch(model, loader, optimizer, criterion, device)
        print(f"epoch {epoch} loss {loss:.4f} batches {batches} ({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
