"""Multi-domain training written as a generator: train_steps() walks each domain's DataLoader in turn every epoch (`for domain, loader in loaders.items(): for x, y in loader:`) and yields a dict of metrics per step, which main() logs; a collate class instance; `sys.exit(main())` with parse_known_args."""
import argparse
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class DomainSignals(Dataset):
    """1-D signals of 6 classes; each domain distorts them its own way (a 'photo' is clean, a 'sketch' is clipped)."""

    def __init__(self, domain, n, seed):
        rng = np.random.default_rng(seed)
        self.domain = domain
        self.labels = rng.integers(0, 6, size=n)
        self.seeds = rng.integers(0, 2**31, size=n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        rng = np.random.default_rng(int(self.seeds[i]))
        c = int(self.labels[i])
        t = np.arange(256) / 256
        x = np.sin(2 * np.pi * (c + 1) * t + rng.uniform(0, 6.3)) + rng.normal(0, 0.8, 256)
        if self.domain == "sketch":
            x = np.clip(x * 2, -1, 1)
        for _ in range(40):  # a slow hand-written filter (the deliberately slow part)
            x = 0.5 * x + 0.25 * (np.roll(x, 1) + np.roll(x, -1))
        return x.astype(np.float32), c


class PadAndStack:
    """Collate numpy rows into a batch, with a domain id column: a class instance, as configurable collators are."""

    def __init__(self, domain_id):
        self.domain_id = domain_id

    def __call__(self, items):
        xs = torch.from_numpy(np.stack([x for x, _ in items]))
        ys = torch.tensor([y for _, y in items])
        return xs, ys, torch.full((len(items),), self.domain_id)


def make_loaders(args):
    loaders = {}
    for k, (domain, n) in enumerate((("photo", 3000), ("sketch", 1500))):
        ds = DomainSignals(domain, n, seed=10 + k)
        loaders[domain] = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                     collate_fn=PadAndStack(k), drop_last=True)
    return loaders


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(1, 16, 7, padding=3), nn.ReLU(), nn.MaxPool1d(4),
                                  nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8), nn.Flatten())
        self.domain_embed = nn.Embedding(2, 32 * 8)
        self.head = nn.Linear(32 * 8, 6)

    def forward(self, x, d):
        return self.head(self.body(x[:, None]) + self.domain_embed(d))


def train_steps(model, loaders, optimizer, epochs):
    criterion = nn.CrossEntropyLoss()
    step = 0
    for epoch in range(epochs):
        model.train()
        for domain, loader in loaders.items():
            for x, y, d in loader:
                logits = model(x, d)
                loss = criterion(logits, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                yield {"epoch": epoch, "domain": domain, "step": step, "loss": loss.item(),
                       "acc": (logits.argmax(1) == y).float().mean().item()}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        print(f"ignoring unknown arguments: {unknown}", file=sys.stderr)

    torch.manual_seed(4)
    loaders = make_loaders(args)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    t0 = time.time()
    per = {}
    for metrics in train_steps(model, loaders, optimizer, args.epochs):
        key = (metrics["epoch"], metrics["domain"])
        n, loss, acc = per.get(key, (0, 0.0, 0.0))
        per[key] = (n + 1, loss + metrics["loss"], acc + metrics["acc"])
        if metrics["domain"] == "sketch" and per[key][0] == len(loaders["sketch"]):
            for domain in loaders:
                n, loss, acc = per[(metrics["epoch"], domain)]
                print(f"epoch {metrics['epoch']} {domain:6s}: batches {n} loss {loss / n:.4f} acc {acc / n:.3f}")
            print(f"  step {metrics['step']} ({time.time() - t0:.1f}s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
