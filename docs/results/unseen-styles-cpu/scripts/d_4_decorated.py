"""Epoch function wrapped in a user-written timing decorator (functools.wraps); the step in its own train_step()."""
import argparse
import functools
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def timeit(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = func(*args, **kwargs)
        elapsed = time.perf_counter() - start
        wrapper.history.append(elapsed)
        return result
    wrapper.history = []
    return wrapper


class TabularDataset(Dataset):
    """Rows of mixed numeric/categorical features, feature-engineered per item in Python."""

    def __init__(self, n, n_num=24, n_cat=6, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.num = torch.randn(n, n_num, generator=g)
        self.cat = torch.randint(0, 50, (n, n_cat), generator=g)
        w = torch.randn(n_num, generator=g)
        self.y = ((self.num @ w + (self.cat[:, 0] % 7).float() * 0.3) > 0).float()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = self.num[i]
        feats = [x, x.abs().sqrt(), torch.tanh(x)]
        for k in range(1, 4):  # pairwise products of neighbouring columns
            feats.append(x * torch.roll(x, k))
        rows = [float(v) for v in torch.cat(feats)]  # a Python pass over the row, as pandas-based code does
        clipped = torch.tensor([min(max(v, -5.0), 5.0) for v in rows])
        return {"num": clipped, "cat": self.cat[i], "target": self.y[i]}


class TabModel(nn.Module):
    def __init__(self, n_in=144, n_cat=6, card=50, emb=8, hidden=256):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(card, emb) for _ in range(n_cat)])
        self.mlp = nn.Sequential(nn.Linear(n_in + n_cat * emb, hidden), nn.ReLU(), nn.Dropout(0.1),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, num, cat):
        e = [emb(cat[:, j]) for j, emb in enumerate(self.embs)]
        return self.mlp(torch.cat([num] + e, dim=1)).squeeze(1)


def train_step(model, batch, opt):
    opt.zero_grad()
    out = model(batch["num"], batch["cat"])
    loss = nn.functional.binary_cross_entropy_with_logits(out, batch["target"])
    loss.backward()
    opt.step()
    return loss.item()


@timeit
def train_epoch(model, loader, opt):
    model.train()
    losses = []
    for batch in loader:
        losses.append(train_step(model, batch, opt))
    return sum(losses) / len(losses), len(losses)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--bs", type=int, default=128)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()
    torch.manual_seed(0)
    ds = TabularDataset(args.n)
    loader = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers)
    model = TabModel()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        loss, nb = train_epoch(model, loader, opt)
        print(f"epoch {epoch} loss {loss:.4f} batches {nb} time {train_epoch.history[-1]:.2f}s", flush=True)


if __name__ == "__main__":
    main()
