"""A NumPy-first data pipeline: __getitem__ returns a dict of numpy arrays, a custom collate stacks them and makes
tensors, and the loop unpacks with batch["..."]; the loader is built by a factory function from a config dict."""
import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

CONFIG = {"data": {"n": 8000, "length": 200}, "loader": {"batch_size": 40, "num_workers": 1, "shuffle": True},
          "optim": {"lr": 3e-3}}


class Signals(Dataset):
    def __init__(self, n, length):
        rng = np.random.default_rng(0)
        self.freqs = rng.uniform(1, 20, size=n)
        self.length = length

    def __len__(self):
        return len(self.freqs)

    def __getitem__(self, i):
        t = np.linspace(0, 1, self.length)
        wave = np.sin(2 * np.pi * self.freqs[i] * t) + 0.3 * np.random.standard_normal(self.length)
        spectrum = np.abs(np.fft.rfft(np.convolve(wave, np.ones(9) / 9, mode="same")))
        return {"wave": wave.astype(np.float32), "spectrum": spectrum.astype(np.float32),
                "label": np.int64(self.freqs[i] > 10)}


def collate(items):
    return {k: torch.from_numpy(np.stack([it[k] for it in items])) for k in items[0]}


def build_loader(cfg):
    return DataLoader(Signals(**cfg["data"]), collate_fn=collate, **cfg["loader"])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--num-workers", type=int, default=None, help="overrides the config's loader.num_workers")
    args = ap.parse_args()
    cfg = CONFIG
    if args.num_workers is not None:
        cfg["loader"]["num_workers"] = args.num_workers
    torch.manual_seed(0)
    loader = build_loader(cfg)
    model = nn.Sequential(nn.Linear(200 + 101, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters(), **cfg["optim"])
    for epoch in range(args.epochs):
        correct = 0
        for batch in loader:
            logits = model(torch.cat([batch["wave"], batch["spectrum"]], 1))
            loss = nn.functional.cross_entropy(logits, batch["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (logits.argmax(1) == batch["label"]).sum().item()
        print(f"epoch {epoch} loss {loss.item():.4f} acc {correct / len(loader.dataset):.3f}", flush=True)


if __name__ == "__main__":
    main()
