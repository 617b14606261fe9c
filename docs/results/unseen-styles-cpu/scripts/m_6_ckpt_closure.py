"""Memory-saving recipe: gradient checkpointing (torch.utils.checkpoint) in the model, accumulation with zero_grad(set_to_none=True) every K micro-batches inside a step(batch) closure that make_step() returns, a ConcatDataset of two sources of different cost split by random_split, and a validation pass every N steps under torch.inference_mode()."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from torch.utils.data import ConcatDataset, DataLoader, Dataset, random_split


class CheapSource(Dataset):
    """Points on noisy rings: cheap to make."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 7 + i)
        label = i % 4
        ang = rng.uniform(0, 2 * np.pi, 32)
        pts = np.stack([np.cos(ang), np.sin(ang)], 1) * (1 + label) + rng.normal(0, 0.3, (32, 2))
        return torch.tensor(pts.ravel(), dtype=torch.float32), label


class CostlySource(Dataset):
    """The same task from a slow source: a random walk integrated step by step, then a short wait."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 11 + i)
        label = i % 4
        ang = np.cumsum(rng.normal(0.2, 0.05, 32))
        r = np.empty(32)
        r[0] = 1 + label
        for k in range(1, 32):
            r[k] = 0.8 * r[k - 1] + 0.2 * (1 + label) + rng.normal(0, 0.1)
        pts = np.stack([np.cos(ang) * r, np.sin(ang) * r], 1)
        time.sleep(0.003)
        return torch.tensor(pts.ravel(), dtype=torch.float32), label


class Collate:
    def __call__(self, batch):
        xs, ys = zip(*batch)
        return torch.stack(xs), torch.tensor(ys)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(x)


class DeepMLP(nn.Module):
    def __init__(self, d_in=64, d=128, depth=6, n_cls=4, use_ckpt=True):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.out = nn.Linear(d, n_cls)
        self.use_ckpt = use_ckpt

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            if self.use_ckpt and self.training and torch.is_grad_enabled():
                h = checkpoint(blk, h, use_reentrant=False)
            else:
                h = blk(h)
        return self.out(h)


def make_step(model, opt, accum):
    micro = 0

    def step(batch):
        nonlocal micro
        x, y = batch
        loss = F.cross_entropy(model(x), y) / accum
        loss.backward()
        micro += 1
        if micro % accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
        return loss.item() * accum

    return step


def validate(model, loader):
    model.eval()
    correct = seen = 0
    with torch.inference_mode():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
            seen += len(y)
    model.train()
    return correct / seen


def train(model, step, train_loader, val_loader, epochs, val_every):
    global_step = 0
    for epoch in range(epochs):
        total, batches = 0.0, 0
        for batch in train_loader:
            total += step(batch)
            batches += 1
            global_step += 1
            if global_step % val_every == 0:
                print(f"  step {global_step} val_acc {validate(model, val_loader):.3f}", flush=True)
        print(f"epoch {epoch} batches {batches} loss {total / batches:.4f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--val-every", type=int, default=100)
    ap.add_argument("--num-workers", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(11)
    full = ConcatDataset([CheapSource(2400, seed=1), CostlySource(1200, seed=2)])
    train_set, val_set = random_split(full, [3200, 400], generator=torch.Generator().manual_seed(0))
    collate = Collate()
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, collate_fn=collate,
                              num_workers=args.num_workers, pin_memory=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=100, collate_fn=collate, num_workers=0)
    model = DeepMLP()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    step = make_step(model, opt, args.accum)
    t0 = time.time()
    train(model, step, train_loader, val_loader, args.epochs, args.val_every)
    print(f"done in {time.time() - t0:.1f}s, final val_acc {validate(model, val_loader):.3f}", flush=True)


if __name__ == "__main__":
    main()
