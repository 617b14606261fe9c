"""Kaggle-kernel style signal classifier with an in-memory cache in the Dataset: each sample is a .npy file of raw
3-channel sensor signal (written first into a tempfile.TemporaryDirectory, as a competition's train/ folder); the
first __getitem__ of an index loads the file, band-pass filters it with an FFT, detrends and standardises it, and
stores the result in `self.cache[idx]` ("so the expensive preprocessing runs once"); every access then takes a random
crop and random gain. The DataLoader uses `num_workers=2` (the kernel default), not persistent. A 1-D CNN, AdamW,
CosineAnnealingLR per epoch, a CFG class of settings, validation AUC-free accuracy per epoch."""
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class CFG:
    seed = 42
    n_samples = 3000
    n_valid = 500
    sig_len = 4096
    crop = 2048
    batch_size = 32
    num_workers = 2
    epochs = 6
    lr = 1e-3


def seed_everything(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)


def write_signals(folder, n, length, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=n)
    t = np.arange(length) / 1000.0
    paths = []
    for i, c in enumerate(labels):
        freq = 20 + 15 * c
        sig = 0.15 * np.sin(2 * np.pi * freq * t + rng.uniform(0, 6.28))[None, :] * rng.uniform(0.5, 1.5, size=(3, 1))
        sig = sig + rng.normal(0, 1.0, size=(3, length)) + np.linspace(0, rng.normal(0, 3), length)[None, :]
        path = os.path.join(folder, f"{i:05d}.npy")
        np.save(path, sig.astype(np.float64))
        paths.append(path)
    return paths, labels


class SignalDataset(Dataset):
    def __init__(self, paths, labels, train=True, use_cache=True):
        self.paths, self.labels = paths, labels
        self.train = train
        self.use_cache = use_cache
        self.cache = {}

    def __len__(self):
        return len(self.paths)

    def _load(self, idx):
        sig = np.load(self.paths[idx])
        spec = np.fft.rfft(sig, axis=1)
        freqs = np.fft.rfftfreq(sig.shape[1], d=1 / 1000.0)
        spec[:, (freqs < 10) | (freqs > 120)] = 0
        sig = np.fft.irfft(spec, n=sig.shape[1], axis=1)
        for ch in range(sig.shape[0]):  # detrend each channel
            coef = np.polyfit(np.arange(sig.shape[1]), sig[ch], 1)
            sig[ch] -= np.polyval(coef, np.arange(sig.shape[1]))
        sig = (sig - sig.mean(axis=1, keepdims=True)) / (sig.std(axis=1, keepdims=True) + 1e-6)
        return sig.astype(np.float32)

    def __getitem__(self, idx):
        if idx in self.cache:
            sig = self.cache[idx]
        else:
            sig = self._load(idx)
            if self.use_cache:
                self.cache[idx] = sig
        if self.train:
            start = np.random.randint(0, sig.shape[1] - CFG.crop + 1)
            x = sig[:, start:start + CFG.crop] * np.random.uniform(0.8, 1.2)
        else:
            start = (sig.shape[1] - CFG.crop) // 2
            x = sig[:, start:start + CFG.crop]
        return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), torch.tensor(self.labels[idx])


class Net1D(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(3, 16, 9, stride=2, padding=4), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, 32, 9, stride=2, padding=4), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Conv1d(32, 32, 9, stride=2, padding=4), nn.BatchNorm1d(32), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.fc(self.body(x))


def train_fn(model, loader, optimizer, criterion):
    model.train()
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses)), len(losses)


def valid_fn(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def main():
    seed_everything(CFG.seed)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        paths, labels = write_signals(tmp, CFG.n_samples, CFG.sig_len, CFG.seed)
        print(f"wrote {len(paths)} files in {time.time() - t0:.1f}s", flush=True)
        n_tr = CFG.n_samples - CFG.n_valid
        train_ds = SignalDataset(paths[:n_tr], labels[:n_tr], train=True)
        valid_ds = SignalDataset(paths[n_tr:], labels[n_tr:], train=False)
        train_loader = DataLoader(train_ds, batch_size=CFG.batch_size, shuffle=True, num_workers=CFG.num_workers,
                                  drop_last=True)
        valid_loader = DataLoader(valid_ds, batch_size=CFG.batch_size * 2, shuffle=False,
                                  num_workers=CFG.num_workers)

        model = Net1D()
        optimizer = torch.optim.AdamW(model.parameters(), lr=CFG.lr, weight_decay=1e-2)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=CFG.epochs)
        criterion = nn.CrossEntropyLoss()
        best = 0.0
        for epoch in range(CFG.epochs):
            t0 = time.time()
            train_loss, n_batches = train_fn(model, train_loader, optimizer, criterion)
            acc = valid_fn(model, valid_loader)
            scheduler.step()
            best = max(best, acc)
            print(f"Epoch {epoch + 1} - batches {n_batches} - avg_train_loss: {train_loss:.4f} - "
                  f"val_acc: {acc:.4f} - time: {time.time() - t0:.1f}s", flush=True)
        print(f"best val_acc {best:.4f}")


if __name__ == "__main__":
    main()
