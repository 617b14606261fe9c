"""`from torch.utils import data` style: data.DataLoader over a data.Subset, OneCycleLR stepped per batch,
and sys.exit(main())."""
import argparse
import sys

import torch
from torch import nn, optim
from torch.utils import data


class Rings(data.Dataset):
    def __init__(self, n=16000):
        g = torch.Generator().manual_seed(3)
        self.r = torch.rand(n, generator=g) * 2
        self.a = torch.rand(n, generator=g) * 6.283

    def __len__(self):
        return len(self.r)

    def __getitem__(self, i):
        p = torch.stack([self.r[i] * torch.cos(self.a[i]), self.r[i] * torch.sin(self.a[i])])
        feats = torch.cat([p, p ** 2, torch.sin(3 * p), torch.cos(3 * p)])
        for _ in range(20):
            feats = feats + 0.01 * torch.tanh(feats)
        return feats, int(self.r[i] > 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    full = Rings()
    train_set = data.Subset(full, range(0, 12000))
    loader = data.DataLoader(train_set, batch_size=48, shuffle=True, num_workers=args.workers, drop_last=True)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = optim.SGD(model.parameters(), lr=0.05)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=args.epochs * len(loader))
    crit = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        losses = []
        for inputs, labels in loader:
            opt.zero_grad()
            loss = crit(model(inputs), labels)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        print(f"epoch {epoch} loss {sum(losses) / len(losses):.4f} batches {len(losses)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
