"""Config-driven (yacs/mmcv style): a YAML config embedded in the script (DEFAULT_CFG, parsed by yaml.safe_load),
optionally merged with `--config FILE.yaml`, then `--opts key.path=value ...` overrides (`--opts
data.loader.num_workers=1`); the loader is built by `build_dataloader(cfg)` from `cfg["data"]["loader"]`, with
`prefetch_factor` and `pin_memory` set, `prefetch_factor` passed only when num_workers > 0 (torch raises
otherwise), and a `collate_fn` that does the heavy work: it pads variable-length 1-D signals and computes a
log-magnitude STFT spectrogram of the whole batch with numpy (the per-sample `__getitem__` is a cheap slice).
With num_workers 0 (the config's default) all of that runs in the main process.

Data cost: real, in collate: ~25-35 ms a batch of 32 (numpy STFT), against ~10 ms of compute a step.
A correct advice: at 0 workers the loop waits most of each step for collation; 1 worker (what 2 CPUs hold beside the
main process) moves it off the main process and should be faster: `num_workers = 1`, `--cpus-per-task = 2`, and the
loader still the bottleneck (ask for more CPUs). The edit must set the count where the script takes it from:
`--opts data.loader.num_workers=1` or the `num_workers: 0` line of DEFAULT_CFG (line 38), not a keyword on the
DataLoader's line that `cfg` would contradict. Losses must match a plain run (no randomness in workers)."""
import argparse
import copy
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml
from torch.utils.data import DataLoader, Dataset

DEFAULT_CFG = """
model:
  channels: 32
  num_classes: 8
data:
  num_samples: 1536
  min_len: 5000
  max_len: 9000
  n_fft: 128
  hop: 32
  loader:
    batch_size: 32
    num_workers: 0
    pin_memory: true
    prefetch_factor: 4
    drop_last: false
train:
  epochs: 10
  lr: 0.001
  seed: 0
"""


def merge(base, extra):
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def apply_opts(cfg, opts):
    for opt in opts or []:
        key, value = opt.split("=", 1)
        node = cfg
        *path, last = key.split(".")
        for p in path:
            node = node[p]
        node[last] = yaml.safe_load(value)
    return cfg


class Signals(Dataset):
    def __init__(self, num_samples, min_len, max_len, num_classes, seed=0):
        rng = np.random.default_rng(seed)
        self.lengths = rng.integers(min_len, max_len, size=num_samples)
        self.labels = rng.integers(0, num_classes, size=num_samples)
        self.bank = rng.standard_normal(max_len * 4).astype(np.float32)
        self.freqs = np.linspace(0.01, 0.4, num_classes)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        n, y = int(self.lengths[idx]), int(self.labels[idx])
        start = (idx * 37) % (len(self.bank) - n)
        t = np.arange(n, dtype=np.float32)
        return self.bank[start:start + n] * 0.5 + np.sin(2 * np.pi * self.freqs[y] * t), y


class SpectrogramCollate:
    def __init__(self, n_fft, hop):
        self.n_fft, self.hop = n_fft, hop
        self.window = np.hanning(n_fft).astype(np.float32)

    def __call__(self, batch):
        max_len = max(len(x) for x, _ in batch)
        padded = np.zeros((len(batch), max_len), dtype=np.float32)
        for i, (x, _) in enumerate(batch):
            padded[i, :len(x)] = x
        n_frames = 1 + (max_len - self.n_fft) // self.hop
        idx = np.arange(self.n_fft)[None, :] + self.hop * np.arange(n_frames)[:, None]
        frames = padded[:, idx] * self.window
        spec = np.log1p(np.abs(np.fft.rfft(frames, axis=-1)))
        spec = (spec - spec.mean(axis=(1, 2), keepdims=True)) / (spec.std(axis=(1, 2), keepdims=True) + 1e-5)
        labels = torch.tensor([y for _, y in batch])
        return torch.from_numpy(spec.astype(np.float32)).transpose(1, 2).contiguous(), labels


def build_dataloader(cfg, dataset, collate_fn, shuffle):
    lc = cfg["data"]["loader"]
    kwargs = dict(batch_size=lc["batch_size"], shuffle=shuffle, num_workers=lc["num_workers"],
                  pin_memory=lc["pin_memory"], drop_last=lc["drop_last"], collate_fn=collate_fn)
    if lc["num_workers"] > 0:
        kwargs["prefetch_factor"] = lc["prefetch_factor"]
    return DataLoader(dataset, **kwargs)


class AudioNet(nn.Module):
    def __init__(self, in_ch, channels, num_classes):
        super().__init__()
        self.conv1 = nn.Conv1d(in_ch, channels, 5, padding=2)
        self.conv2 = nn.Conv1d(channels, channels, 5, padding=2)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(F.max_pool1d(x, 2)))
        return self.fc(x.mean(-1))


def run(cfg):
    torch.manual_seed(cfg["train"]["seed"])
    d = cfg["data"]
    dataset = Signals(d["num_samples"], d["min_len"], d["max_len"], cfg["model"]["num_classes"],
                      cfg["train"]["seed"])
    loader = build_dataloader(cfg, dataset, SpectrogramCollate(d["n_fft"], d["hop"]), shuffle=True)
    model = AudioNet(d["n_fft"] // 2 + 1, cfg["model"]["channels"], cfg["model"]["num_classes"])
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["train"]["lr"])
    for epoch in range(cfg["train"]["epochs"]):
        start, total, iters = time.time(), 0.0, 0
        for spec, labels in loader:
            logits = model(spec)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            iters += 1
        print(f"epoch {epoch} iters {iters} loss {total / iters:.4f} time {time.time() - start:.2f}s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=None, help="YAML file merged over the defaults")
    parser.add_argument("--opts", nargs="*", default=[], help="overrides, key.path=value")
    args = parser.parse_args()
    cfg = yaml.safe_load(DEFAULT_CFG)
    if args.config:
        with open(args.config) as f:
            merge(cfg, yaml.safe_load(f))
    cfg = apply_opts(copy.deepcopy(cfg), args.opts)
    print(f"loader config: {cfg['data']['loader']}", flush=True)
    run(cfg)


if __name__ == "__main__":
    main()
