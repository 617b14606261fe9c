"""Batched fetching for tabular data: the Dataset's __getitem__ takes a *list* of indices and returns a whole batch;
the DataLoader gets `sampler=BatchSampler(RandomSampler(..., replacement=True, num_samples=...), ...)` and
`batch_size=None` (no auto-batching), with `prefetch_factor` when workers are used. An "epoch" is a fixed number of
samples drawn with replacement. The worker count is `-j/--jobs`."""
import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler


class TabularBatches(Dataset):
    def __init__(self, n_rows=20000, n_num=24, n_cat=6, seed=0):
        rng = np.random.default_rng(seed)
        self.num = rng.normal(size=(n_rows, n_num)).astype(np.float32)
        self.cat = rng.integers(0, 10, size=(n_rows, n_cat))
        w = rng.normal(size=n_num)
        self.y = ((self.num @ w + (self.cat[:, 0] > 4) * 1.5) > 0).astype(np.float32)
        self.edges = np.quantile(self.num, np.linspace(0, 1, 17)[1:-1], axis=0).T   # (n_num, 15)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, indices):
        idx = np.asarray(indices)
        num = self.num[idx].copy()
        # per-row feature engineering, the way it is often written first: a Python loop over rows
        binned = np.empty((len(idx), num.shape[1]), dtype=np.float32)
        for r in range(len(idx)):
            for c in range(num.shape[1]):
                binned[r, c] = np.searchsorted(self.edges[c], num[r, c]) / 16.0
        num += np.random.normal(0, 0.05, num.shape).astype(np.float32)   # noise augmentation
        onehot = np.eye(10, dtype=np.float32)[self.cat[idx]].reshape(len(idx), -1)
        x = np.concatenate([num, binned, onehot], axis=1)
        return torch.from_numpy(x), torch.from_numpy(self.y[idx])


def train_epoch(model, loader, opt, loss_fn):
    model.train()
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x).squeeze(1), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return float(np.mean(losses)), len(losses)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", "--jobs", type=int, default=1, help="data loading processes")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--samples-per-epoch", type=int, default=40960)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lr", type=float, default=2e-3)
    args = ap.parse_args()

    torch.manual_seed(0)
    np.random.seed(0)
    ds = TabularBatches()
    sampler = BatchSampler(RandomSampler(ds, replacement=True, num_samples=args.samples_per_epoch),
                           batch_size=args.batch_size, drop_last=True)
    loader = DataLoader(ds, sampler=sampler, batch_size=None, num_workers=args.jobs,
                        prefetch_factor=4 if args.jobs > 0 else None)
    d_in = 24 + 24 + 6 * 10
    model = nn.Sequential(nn.Linear(d_in, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(args.epochs):
        loss, n_batches = train_epoch(model, loader, opt, loss_fn)
        print(f"epoch {epoch} train_loss {loss:.4f} batches {n_batches}", flush=True)


if __name__ == "__main__":
    main()
