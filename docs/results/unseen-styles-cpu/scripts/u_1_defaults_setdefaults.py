"""Config-dict style (seen in research repos that keep "the paper's settings" at the top of the file): a module-level
`DEFAULTS = dict(...)` holds every hyper-parameter, the argparse options carry no `default=` of their own and
`parser.set_defaults(**DEFAULTS)` fills them in. The forward pass runs under
`torch.autocast("cpu", dtype=torch.bfloat16)`. MNIST-example loop: `for batch_idx, (data, target) in
enumerate(train_loader)` inside `train(args, model, train_loader, optimizer, epoch)`.

A correct report: the loop is train()'s `for batch_idx, ...`; each of the 3 epochs keeps 40 batches; the count comes
from `num_workers=1` in DEFAULTS (the edit: that key, or `--num-workers N`); the DataLoader line reads
`args.num_workers` and has no literal to change.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

DEFAULTS = dict(
    batch_size=32,
    epochs=3,
    lr=1e-3,
    num_workers=1,
    seed=1,
    log_interval=10,
)


class Glyphs(Dataset):
    """28x28 synthetic 'digits': a blurred stroke pattern per class plus noise (~4 ms an item)."""

    def __init__(self, n=1280):
        self.labels = np.random.default_rng(0).integers(0, 10, n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = int(self.labels[i])
        img = np.zeros((28, 28), np.float32)
        img[4 + y:24 - y // 2, 6 + y // 2:10 + y] = 1.0
        img += 0.3 * g.standard_normal((28, 28)).astype(np.float32)
        for _ in range(3):
            img = (img + np.roll(img, 1, 0) + np.roll(img, 1, 1)) / 3.0
        time.sleep(0.003)
        return torch.from_numpy(img)[None], y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.fc = nn.Linear(32 * 12 * 12, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def train(args, model, train_loader, optimizer, epoch):
    model.train()
    total, n = 0.0, 0
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            output = model(data)
        loss = F.cross_entropy(output.float(), target)
        loss.backward()
        optimizer.step()
        total += loss.item()
        n += 1
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}")
    return total / n, n


def main():
    parser = argparse.ArgumentParser(description="glyph classifier")
    parser.add_argument("--batch-size", type=int, metavar="N")
    parser.add_argument("--epochs", type=int, metavar="N")
    parser.add_argument("--lr", type=float, metavar="LR")
    parser.add_argument("--num-workers", type=int, metavar="N", help="data loading workers")
    parser.add_argument("--seed", type=int, metavar="S")
    parser.add_argument("--log-interval", type=int, metavar="N")
    parser.set_defaults(**DEFAULTS)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    train_kwargs = {"batch_size": args.batch_size, "shuffle": True}
    train_loader = DataLoader(Glyphs(), num_workers=args.num_workers, **train_kwargs)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        loss, n = train(args, model, train_loader, optimizer, epoch)
        print(f"epoch {epoch} loss {loss:.4f} batches {n} workers {train_loader.num_workers} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
