"""Semi-supervised (FixMatch-like) training: labeled + unlabeled loaders zipped."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageFilter
from torch.utils.data import DataLoader, Dataset


class ImageSet(Dataset):
    def __init__(self, n, labeled=True, seed=0):
        rng = np.random.default_rng(seed)
        self.data = rng.integers(0, 256, size=(n, 40, 40, 3), dtype=np.uint8)
        self.targets = rng.integers(0, 10, size=n) if labeled else np.full(n, -1)

    def __len__(self):
        return len(self.data)

    def augment(self, img):
        img = img.rotate(np.random.uniform(-15, 15))
        if np.random.rand() < 0.5:
            img = img.filter(ImageFilter.SMOOTH)
        arr = np.asarray(img, dtype=np.float32) / 255.0
        arr = arr + np.random.normal(0, 0.02, arr.shape).astype(np.float32)
        return torch.from_numpy(((arr - 0.5) / 0.25).transpose(2, 0, 1).copy())

    def __getitem__(self, index):
        img = Image.fromarray(self.data[index])
        return self.augment(img), int(self.targets[index])


class WideNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def train(args, labeled_loader, unlabeled_loader, model, optimizer, epoch):
    model.train()
    t0 = time.time()
    steps = 0
    for (x_l, y_l), (x_u, _) in zip(labeled_loader, unlabeled_loader):
        logits_l = model(x_l)
        loss_x = F.cross_entropy(logits_l, y_l)
        with torch.no_grad():
            pseudo = torch.softmax(model(x_u), dim=-1)
            max_probs, targets_u = torch.max(pseudo, dim=-1)
            mask = max_probs.ge(args.threshold).float()
        loss_u = (F.cross_entropy(model(x_u), targets_u, reduction="none") * mask).mean()
        loss = loss_x + args.lambda_u * loss_u
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps += 1
    print(f"EPOCH {epoch} batches={steps} time={time.time() - t0:.2f}s loss={loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--mu", type=int, default=2, help="unlabeled batch ratio")
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--lambda-u", type=float, default=1.0)
    parser.add_argument("--n-labeled", type=int, default=1000)
    parser.add_argument("--n-unlabeled", type=int, default=3000)
    args = parser.parse_args()
    torch.manual_seed(1)

    labeled_dataset = ImageSet(args.n_labeled, labeled=True, seed=1)
    unlabeled_dataset = ImageSet(args.n_unlabeled, labeled=False, seed=2)
    labeled_loader = DataLoader(labeled_dataset, batch_size=args.batch_size, shuffle=True,
                                num_workers=args.num_workers, drop_last=True)
    unlabeled_loader = DataLoader(unlabeled_dataset, batch_size=args.batch_size * args.mu,
                                  shuffle=True, num_workers=args.num_workers, drop_last=True)
    print(f"len(labeled_loader)={len(labeled_loader)} len(unlabeled_loader)={len(unlabeled_loader)}")
    model = WideNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True)
    for epoch in range(args.epochs):
        train(args, labeled_loader, unlabeled_loader, model, optimizer, epoch)


if __name__ == "__main__":
    main()
