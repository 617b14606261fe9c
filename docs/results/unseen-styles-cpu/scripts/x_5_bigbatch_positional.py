"""Large-batch linear-model style (logistic regression / MLP baselines in papers' appendices and scikit-like
tutorials): `DataLoader(train_set, 512, True, num_workers=1)` with batch_size and shuffle given POSITIONALLY and the
worker count a literal; only 4 batches per epoch (2048 items) and 4 epochs, so the whole run is 16 batches; each item
is a 256-sample signal whose spectral features are computed in numpy (plus a 2 ms sleep standing for a read).
Everything at module level (no main(), no `__name__` guard), as in quick notebook-exported scripts.

A correct report: the loop is the module-level `for xb, yb in train_loader:` in the `for epoch in range(EPOCHS)`
loop; 4 epochs of 4 batches (2048 items, batch 512); the count is the literal `num_workers=1` on the DataLoader line
(edit that literal; no flag or env var). With so few batches the profiler may not have room to try many counts and
should say so rather than extrapolate.
"""
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

EPOCHS = 4
torch.manual_seed(0)


class Signals(Dataset):
    def __init__(self, n=2048):
        self.y = np.random.default_rng(3).integers(0, 2, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        t = np.arange(256) / 256.0
        f = 10 + 8 * self.y[i]
        x = np.sin(2 * np.pi * f * t) + g.standard_normal(256)
        spec = np.abs(np.fft.rfft(x * np.hanning(256)))[:64]
        time.sleep(0.002)
        return torch.from_numpy(np.log1p(spec).astype(np.float32)), torch.tensor(float(self.y[i]))


train_set = Signals()
train_loader = DataLoader(train_set, 512, True, num_workers=1)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.BCEWithLogitsLoss()

for epoch in range(EPOCHS):
    total, nb = 0.0, 0
    for xb, yb in train_loader:
        loss = loss_fn(model(xb).squeeze(1), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        nb += 1
    print(f"epoch {epoch} loss {total / nb:.4f} batches {nb}")
