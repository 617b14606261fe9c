"""Batched-fetch style (torch>=2.0 `Dataset.__getitems__`, seen in HF-datasets-backed and tabular repos): the
dataset implements `__getitems__(indices)` which fetches a whole batch in one vectorised numpy call and returns a
list of dicts; a custom `collate_dict` stacks them into a dict of tensors. The loader has `pin_memory=True` although
the run is CPU-only (a common copy-paste). The worker count is a class attribute of a plain config class,
`class Cfg: workers = 2`, passed as `num_workers=Cfg.workers`. Loop: `for batch in loader` in main(), reading
`batch["x"]`, `batch["y"]`.

A correct report: the loop is main()'s `for batch in loader`; 3 epochs of 40 batches (2560 rows, batch 64); each
batch costs one __getitems__ call (~8 ms sleep + numpy), so per-item timing is per-batch here; the count is
`Cfg.workers = 2` (edit that class attribute; the DataLoader line has no literal). pin_memory on CPU only warns.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Cfg:
    rows = 2560
    features = 48
    batch_size = 64
    epochs = 3
    workers = 2
    lr = 1e-2


class TableShard(Dataset):
    def __init__(self, rows, features):
        g = np.random.default_rng(9)
        self.w = g.standard_normal(features).astype(np.float32)
        self.rows, self.features = rows, features

    def __len__(self):
        return self.rows

    def _rows(self, idx):
        idx = np.asarray(idx)
        x = np.stack([np.random.default_rng(int(i)).standard_normal(self.features) for i in idx]).astype(np.float32)
        x = np.cumsum(x, axis=1) / np.sqrt(np.arange(1, self.features + 1, dtype=np.float32))
        y = (x @ self.w > 0).astype(np.int64)
        return x, y

    def __getitem__(self, i):
        x, y = self._rows([i])
        time.sleep(0.001)
        return {"x": x[0], "y": y[0]}

    def __getitems__(self, indices):
        x, y = self._rows(indices)
        time.sleep(0.008)  # one "range read" per batch
        return [{"x": x[k], "y": y[k]} for k in range(len(indices))]


def collate_dict(items):
    return {"x": torch.from_numpy(np.stack([it["x"] for it in items])),
            "y": torch.from_numpy(np.array([it["y"] for it in items]))}


def main():
    torch.manual_seed(0)
    ds = TableShard(Cfg.rows, Cfg.features)
    loader = DataLoader(ds, batch_size=Cfg.batch_size, shuffle=True, num_workers=Cfg.workers,
                        collate_fn=collate_dict, pin_memory=True)
    model = nn.Sequential(nn.Linear(Cfg.features, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=Cfg.lr, momentum=0.9)
    for epoch in range(Cfg.epochs):
        t0 = time.time()
        tot, n = 0.0, 0
        for batch in loader:
            loss = F.cross_entropy(model(batch["x"]), batch["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            n += 1
        print(f"epoch {epoch} loss {tot / n:.4f} batches {n} workers {loader.num_workers} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
