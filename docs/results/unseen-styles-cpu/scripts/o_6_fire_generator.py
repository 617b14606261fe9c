"""python-fire style entry point without `fire`: `main(epochs=7, batch_size=64, num_workers=1, lr=1e-3, ...)` is
called by a small hand-written `Fire(main)` that maps `--num_workers=2` / `--num_workers 2` / `--num-workers 2` on
`sys.argv` to the function's keyword arguments (typed from their defaults). No argparse anywhere. The training loop
consumes a generator that converts the loader's uint8 batches as they come,
`def batches(loader): for x, y in loader: yield x.float().div_(255), y` (the "to float on the fly" idiom of code that
keeps uint8 tensors in its Dataset to save memory), and logs with a smoothed loss.

Data: uint8 32x32 RGB images, augmented per sample in numpy (about 1 ms a sample; 64 ms a batch of 64), a small MLP
step of a few ms. 1 worker by default: the loop waits most of each step at any count 2 CPUs hold.

A correct report: the loop is `for x, y in batches(train_loader)` in `main()` (its wait is the generator's line);
counts 0 and 1 measured; 1 worker advised with "ask for more CPUs" (2 workers ran about 1.8x faster than 1 when
run plain on 2 cores, in earlier batches' scripts of this kind). The edit must go through the script's own
`--num_workers N` (a keyword of `main`), or else say that hard-coding the DataLoader line makes that flag dead.
"""
import inspect
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, random_split


def Fire(component):
    """A tiny subset of python-fire: --name=value, --name value, and -/_ both accepted."""
    sig = inspect.signature(component)
    kwargs, argv, i = {}, sys.argv[1:], 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            raise SystemExit(f"unexpected argument {arg!r}")
        name, eq, value = arg[2:].partition("=")
        if not eq:
            i += 1
            value = argv[i]
        name = name.replace("-", "_")
        default = sig.parameters[name].default
        kwargs[name] = type(default)(value) if default is not None else value
        i += 1
    return component(**kwargs)


class Uint8Images(Dataset):
    def __init__(self, n=3200, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 10, n)
        self.images = rng.integers(0, 200, (n, 3, 32, 32), dtype=np.uint8)
        for i, c in enumerate(self.labels):
            self.images[i, c % 3, 3 * c:3 * c + 3] += 50

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        r = np.random.default_rng(idx)
        img = self.images[idx].astype(np.float32)
        img = np.pad(img, ((0, 0), (4, 4), (4, 4)), mode="edge")
        a, b = r.integers(0, 9, 2)
        img = img[:, a:a + 32, b:b + 32]
        for _ in range(22):
            img = 0.6 * img + 0.1 * (np.roll(img, 1, 1) + np.roll(img, -1, 1) + np.roll(img, 1, 2) + np.roll(img, -1, 2))
        return torch.from_numpy(np.clip(img, 0, 255).astype(np.uint8)), int(self.labels[idx])


def batches(loader):
    for x, y in loader:
        yield x.float().div_(255), y


class MLP(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)


def main(epochs=7, batch_size=64, num_workers=1, lr=1e-3, seed=0, val_fraction=0.1):
    torch.manual_seed(seed)
    full = Uint8Images()
    n_val = int(len(full) * val_fraction)
    train_set, val_set = random_split(full, [len(full) - n_val, n_val], generator=torch.Generator().manual_seed(seed))
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=num_workers)
    val_loader = DataLoader(val_set, batch_size=256)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        t0, smooth, n = time.time(), None, 0
        model.train()
        for x, y in batches(train_loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            smooth = loss.item() if smooth is None else 0.9 * smooth + 0.1 * loss.item()
            n += 1
        model.eval()
        with torch.no_grad():
            acc = np.mean([(model(x).argmax(1) == y).float().mean().item() for x, y in batches(val_loader)])
        print(f"epoch {epoch} loss {smooth:.4f} val_acc {acc:.3f} batches {n} ({time.time() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    Fire(main)
