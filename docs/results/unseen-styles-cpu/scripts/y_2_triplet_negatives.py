"""Metric learning: a triplet dataset that samples a positive and a random negative inside __getitem__
(anchor/positive share an identity), TripletMarginLoss, embedding net. Loader args come from argparse
with --workers default 0 (the common 'debug-friendly' default)."""
import argparse
import random
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class TripletIdentities(Dataset):
    def __init__(self, n_ids=40, per_id=30, dim=24):
        self.n_ids, self.per_id, self.dim = n_ids, per_id, dim
        rng = np.random.default_rng(1)
        self.protos = rng.normal(0, 1, (n_ids, dim, dim)).astype(np.float32)
        self.index = [(c, k) for c in range(n_ids) for k in range(per_id)]

    def __len__(self):
        return len(self.index)

    def render(self, c, k):
        rng = np.random.default_rng(c * 1000 + k)
        x = self.protos[c] + rng.normal(0, 0.8, (self.dim, self.dim)).astype(np.float32)
        for _ in range(4):  # blur / FFT jitter: per-item CPU work
            f = np.fft.rfft2(x)
            f *= np.exp(-0.01 * np.arange(f.shape[1]))[None, :]
            x = np.fft.irfft2(f, s=x.shape).astype(np.float32)
            x = x @ np.eye(self.dim, dtype=np.float32)[::-1] * 0.5 + x * 0.5
        return torch.from_numpy(x).unsqueeze(0)

    def __getitem__(self, i):
        c, k = self.index[i]
        pos_k = random.choice([j for j in range(self.per_id) if j != k])
        neg_c = random.choice([j for j in range(self.n_ids) if j != c])
        neg_k = random.randrange(self.per_id)
        return self.render(c, k), self.render(c, pos_k), self.render(neg_c, neg_k)


class EmbedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                                 nn.Flatten(), nn.Linear(128, 32))

    def forward(self, x):
        return nn.functional.normalize(self.net(x), dim=1)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=48)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--margin", type=float, default=0.3)
    return p.parse_args()


if __name__ == "__main__":
    args = parse()
    random.seed(0)
    torch.manual_seed(0)
    ds = TripletIdentities()
    train_loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers, drop_last=False)
    net = EmbedNet()
    criterion = nn.TripletMarginLoss(margin=args.margin)
    optim = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for ep in range(1, args.epochs + 1):
        net.train()
        run, steps = 0.0, 0
        for a, p_, n in train_loader:
            loss = criterion(net(a), net(p_), net(n))
            optim.zero_grad()
            loss.backward()
            optim.step()
            run += loss.item()
            steps += 1
        print(f"[ep {ep}] steps={steps} triplet_loss={run / steps:.4f}")
