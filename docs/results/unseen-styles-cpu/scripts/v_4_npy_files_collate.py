"""Real small files on disk + a collate *class* (as in speech / time-series repos): at start-up the script writes
1024 variable-length sequences as separate `.npy` files into a `tempfile.TemporaryDirectory()`; the Dataset globs
them and `np.load`s one per item (plus a moving-average filter); `PadCollate(pad_value=0.)` (a class with
`__call__`) pads each batch to its longest sequence and returns lengths. The loader is made by a helper
`make_loader(ds, batch_size=32, workers=1)` whose *default argument* sets the count; the call site passes no
workers. All of training happens inside `with tempfile.TemporaryDirectory() as root:`. A GRU over packed sequences.

A correct report: the loop is run_epoch()'s `for step, (x, lengths, y) in enumerate(loader):`; 3 epochs of 32
batches (1024 files, batch 32); the count comes from `workers=1`, the default of make_loader's signature (edit that
default, or pass `workers=N` at the call in main()); the DataLoader line reads `num_workers=workers`.
"""
import glob
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import DataLoader, Dataset


def write_corpus(root, n=1024, seed=0):
    g = np.random.default_rng(seed)
    for i in range(n):
        label = int(g.integers(0, 4))
        length = int(g.integers(40, 160))
        t = np.arange(length)
        x = np.stack([np.sin(t * (0.05 + 0.05 * label)), np.cos(t * 0.1 * (label + 1))], 1)
        x = x + 0.5 * g.standard_normal((length, 2))
        np.save(os.path.join(root, f"{i:05d}_{label}.npy"), x.astype(np.float32))


class NpySequences(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path = self.files[i]
        x = np.load(path)
        k = np.ones(5, np.float32) / 5
        x = np.stack([np.convolve(x[:, c], k, mode="same") for c in range(x.shape[1])], 1)
        x = (x - x.mean(0)) / (x.std(0) + 1e-6)
        time.sleep(0.003)  # stand-in for a slow network filesystem
        return torch.from_numpy(x), int(os.path.basename(path).split("_")[1][0])


class PadCollate:
    def __init__(self, pad_value=0.0):
        self.pad_value = pad_value

    def __call__(self, batch):
        lengths = torch.tensor([len(x) for x, _ in batch])
        out = torch.full((len(batch), int(lengths.max()), batch[0][0].shape[1]), self.pad_value)
        for j, (x, _) in enumerate(batch):
            out[j, :len(x)] = x
        return out, lengths, torch.tensor([y for _, y in batch])


def make_loader(ds, batch_size=32, workers=1, shuffle=True):
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle, num_workers=workers,
                      collate_fn=PadCollate(pad_value=0.0))


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(2, 32, batch_first=True)
        self.out = nn.Linear(32, 4)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return self.out(h[-1])


def run_epoch(model, loader, opt):
    model.train()
    total, steps = 0.0, 0
    for step, (x, lengths, y) in enumerate(loader):
        loss = F.cross_entropy(model(x, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        steps = step + 1
    return total / steps, steps


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        write_corpus(root)
        ds = NpySequences(root)
        loader = make_loader(ds)
        model = GRUClassifier()
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        for epoch in range(3):
            t0 = time.time()
            loss, steps = run_epoch(model, loader, opt)
            print(f"epoch {epoch} loss {loss:.4f} steps {steps} workers {loader.num_workers} "
                  f"({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
