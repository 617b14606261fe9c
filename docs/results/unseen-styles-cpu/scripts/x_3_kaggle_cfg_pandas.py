"""Kaggle-notebook style tabular regression: a `class CFG:` of class attributes (`num_workers = 2`, `batch_size = 64`,
`epochs = 3`, ...) read as `CFG.num_workers`; a pandas DataFrame built at start-up; the Dataset keeps the frame and
reads one row per item with `row = self.df.iloc[idx]` (then a small numpy feature expansion); `train_fn(...)` is the
per-epoch function called from a `for epoch in range(CFG.epochs)` loop, with a `valid_fn` after each epoch.

A correct report: the loop is train_fn()'s `for step, (x, y) in enumerate(train_loader):`; 3 epochs of 20 batches
(1280 training rows of 1600, batch 64, drop_last=True); the count comes from the `num_workers = 2` line in class CFG
(the DataLoader line reads `num_workers=CFG.num_workers`): the edit is that class attribute; no flag exists.
The validation loader (`valid_fn`) also uses CFG.num_workers.
"""
import time

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class CFG:
    seed = 42
    num_workers = 2
    batch_size = 64
    epochs = 3
    lr = 1e-3
    n_rows = 1600
    features = [f"f{i}" for i in range(16)]
    target = "target"


def make_frame():
    rng = np.random.default_rng(CFG.seed)
    X = rng.standard_normal((CFG.n_rows, len(CFG.features)))
    w = rng.standard_normal(len(CFG.features))
    df = pd.DataFrame(X, columns=CFG.features)
    df[CFG.target] = X @ w + 0.3 * np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(CFG.n_rows)
    df["fold"] = np.arange(CFG.n_rows) % 5
    return df


class TabDataset(Dataset):
    def __init__(self, df):
        self.df = df.reset_index(drop=True)

    def __len__(self):
        return len(self.df)

    def __getitem__(self, idx):
        row = self.df.iloc[idx]
        x = row[CFG.features].values.astype(np.float32)
        # a per-row feature expansion (pairwise products), as notebooks do on the fly
        x = np.concatenate([x, np.outer(x, x)[np.triu_indices(len(x))]]).astype(np.float32)
        time.sleep(0.002)
        return torch.from_numpy(x), torch.tensor(row[CFG.target], dtype=torch.float32)


def train_fn(train_loader, model, optimizer, criterion):
    model.train()
    losses = []
    for step, (x, y) in enumerate(train_loader):
        pred = model(x).squeeze(-1)
        loss = criterion(pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses)), step + 1


@torch.no_grad()
def valid_fn(valid_loader, model, criterion):
    model.eval()
    return float(np.mean([criterion(model(x).squeeze(-1), y).item() for x, y in valid_loader]))


def main():
    torch.manual_seed(CFG.seed)
    df = make_frame()
    trn, val = df[df.fold != 0], df[df.fold == 0]
    train_loader = DataLoader(TabDataset(trn), batch_size=CFG.batch_size, shuffle=True,
                              num_workers=CFG.num_workers, drop_last=True)
    valid_loader = DataLoader(TabDataset(val), batch_size=CFG.batch_size * 2, shuffle=False,
                              num_workers=CFG.num_workers)
    n_in = len(CFG.features) + len(CFG.features) * (len(CFG.features) + 1) // 2
    model = nn.Sequential(nn.Linear(n_in, 128), nn.SiLU(), nn.Linear(128, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=CFG.lr)
    criterion = nn.MSELoss()
    print(f"CFG.num_workers={CFG.num_workers} train batches={len(train_loader)}")
    for epoch in range(CFG.epochs):
        tr, nb = train_fn(train_loader, model, optimizer, criterion)
        va = valid_fn(valid_loader, model, criterion)
        print(f"Epoch {epoch + 1} - avg_train_loss: {tr:.4f} avg_val_loss: {va:.4f} ({nb} batches)")


if __name__ == "__main__":
    main()
