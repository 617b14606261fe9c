"""Keras-like `model.fit()` on an nn.Module (as in many tutorials and small libraries, e.g. torchkeras/poutyne-ish):
`class Regressor(nn.Module)` has a `fit(self, dataset, epochs=3, batch_size=32, loader_opts=None)` method that
builds its own DataLoader inside: `loader_opts = loader_opts or {"num_workers": 2, "drop_last": True}` then
`DataLoader(dataset, batch_size=batch_size, shuffle=True, **loader_opts)`; a `OneCycleLR(...,
steps_per_epoch=len(loader), epochs=epochs)` scheduler steps every batch (it raises if more batches than planned
are run); `history` dict of per-epoch losses returned. Called as `model.fit(ds, epochs=3)` at module bottom under
`if __name__`. Items: a 1-D regression target computed from a 64-sample signal with numpy FFT (+2 ms sleep).

A correct report: the loop is Regressor.fit()'s `for xb, yb in loader:`; 3 epochs of 37 batches (1200 items,
batch 32, drop_last); the count comes from the `{"num_workers": 2, ...}` default inside fit() (edit that dict, or
pass `loader_opts={"num_workers": N, "drop_last": True}` at the call - passing only num_workers drops drop_last).
The OneCycleLR must still see exactly 37*3 steps, else it raises ValueError.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Signals(Dataset):
    def __init__(self, n=1200, seed=0):
        self.n = n
        self.params = np.random.default_rng(seed).uniform(0.5, 3.0, size=(n, 3))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        a, f, p = self.params[i]
        t = np.linspace(0, 1, 64)
        x = a * np.sin(2 * np.pi * f * t + p) + 0.2 * np.random.default_rng(i).standard_normal(64)
        spec = np.abs(np.fft.rfft(x))
        y = np.array([a, f], np.float32)
        time.sleep(0.002)
        return torch.from_numpy(np.concatenate([x, spec]).astype(np.float32)), torch.from_numpy(y)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64 + 33, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        return self.net(x)

    def fit(self, dataset, epochs=3, batch_size=32, lr=3e-3, loader_opts=None):
        loader_opts = loader_opts or {"num_workers": 2, "drop_last": True}
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, **loader_opts)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, epochs=epochs, steps_per_epoch=len(loader))
        history = {"loss": []}
        for epoch in range(epochs):
            self.train()
            t0, total, seen = time.time(), 0.0, 0
            for xb, yb in loader:
                loss = F.mse_loss(self(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total += loss.item()
                seen += 1
            history["loss"].append(total / seen)
            print(f"Epoch {epoch + 1}/{epochs} - loss: {total / seen:.4f} - steps: {seen}/{len(loader)} - "
                  f"workers: {loader.num_workers} - {time.time() - t0:.1f}s")
        return history


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Regressor()
    hist = model.fit(Signals(), epochs=3)
    print("final loss", round(hist["loss"][-1], 4))
