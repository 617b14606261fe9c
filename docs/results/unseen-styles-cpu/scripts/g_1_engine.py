"""torchvision-references layout: train.py builds everything, g_1_lib/engine.py holds train_one_epoch and a
MetricLogger whose log_every() generator wraps the DataLoader."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

from g_1_lib.engine import evaluate, train_one_epoch


class Jittered(Dataset):
    """Small images, jittered per item in __getitem__ (a CPU cost the workers pay)."""

    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 3, 32, 32, generator=g)
        self.y = (self.x[:, 0].mean((1, 2)) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        img = self.x[i]
        for _ in range(4):
            img = torch.roll(img, shifts=1, dims=2) * 0.99 + 0.01 * torch.randn_like(img)
        return img, self.y[i]


def get_args_parser():
    p = argparse.ArgumentParser(description=__doc__, add_help=True)
    p.add_argument("--epochs", default=4, type=int)
    p.add_argument("-b", "--batch-size", default=64, type=int)
    p.add_argument("-j", "--workers", default=2, type=int)
    p.add_argument("--lr", default=0.05, type=float)
    p.add_argument("--print-freq", default=40, type=int)
    return p


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train = DataLoader(Jittered(4096), batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                       pin_memory=True, drop_last=True)
    test = DataLoader(Jittered(1024, seed=1), batch_size=256, num_workers=args.workers)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                          nn.Linear(256, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        loss = train_one_epoch(model, criterion, optimizer, train, device, epoch, args.print_freq)
        print(f"epoch {epoch} loss {loss:.4f} acc {evaluate(model, test, device):.3f}", flush=True)


if __name__ == "__main__":
    main(get_args_parser().parse_args())
