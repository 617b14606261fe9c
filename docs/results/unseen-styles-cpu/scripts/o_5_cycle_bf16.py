"""Step-budget training over `itertools.cycle(train_loader)`, as in many semi-supervised, GAN and few-shot repos
(`from itertools import cycle`; `data_iter = cycle(train_loader)`; `x, y = next(data_iter)` for `--max-steps`
steps), with gradient accumulation (`--accum`) and `torch.autocast("cpu", dtype=torch.bfloat16)`.

The pitfall this style carries: `itertools.cycle` saves every item of its first pass and replays the saved batches
ever after. The DataLoader is iterated exactly once: its workers build the first 100 batches, and every later
"epoch" replays them in the same order with no loading at all (no reshuffle, no new augmentation).

Data: 32x32 RGB images augmented in numpy per sample (about 1 ms a sample, 32 ms a batch of 32); a small CNN
step; 0 workers by default. The first pass waits for data most of each step; the other eleven passes wait ~0.

What a correct report looks like: the loader is read once (the first 100 of 1200 steps); the data wait of the run
as a whole is small after that, so workers cannot matter much for this run as written (the real fix is to stop
cycling a DataLoader, or to re-create the iterator per pass). Worker counts cannot be tried (one iterator). Any
advice must not claim to have measured counts, and "the run ended in its first epoch/traced part" would be
misleading for a run of 1200 steps. The edit is `--workers N`. The run must still train 1200 steps.
"""
import argparse
from itertools import cycle

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Cifarish(Dataset):
    def __init__(self, n=3200, seed=0):
        rng = np.random.default_rng(seed)
        self.y = rng.integers(0, 10, n)
        self.x = rng.integers(0, 200, (n, 32, 32, 3), dtype=np.uint8)
        for i, c in enumerate(self.y):
            self.x[i, 3 * c:3 * c + 3] += 50

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        img = self.x[i].astype(np.float32) / 255.0
        img = np.pad(img, ((4, 4), (4, 4), (0, 0)), mode="reflect")
        a, b = r.integers(0, 9, 2)
        img = img[a:a + 32, b:b + 32]
        if r.random() < 0.5:
            img = img[:, ::-1]
        for _ in range(20):
            img = 0.6 * img + 0.1 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(self.y[i])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def train(args):
    torch.manual_seed(args.seed)
    train_loader = DataLoader(Cifarish(), batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                              drop_last=True)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.max_steps // args.accum)
    data_iter = cycle(train_loader)
    model.train()
    running = 0.0
    for step in range(args.max_steps):
        x, y = next(data_iter)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.float(), y) / args.accum
        loss.backward()
        if (step + 1) % args.accum == 0:
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
        running += loss.item() * args.accum
        if (step + 1) % args.log_every == 0:
            print(f"step {step + 1}/{args.max_steps} loss {running / args.log_every:.4f} "
                  f"lr {scheduler.get_last_lr()[0]:.4f}", flush=True)
            running = 0.0
    print(f"done: {args.max_steps} steps ({args.max_steps / len(train_loader):.1f} passes of {len(train_loader)} "
          f"batches)", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--max-steps", type=int, default=1200)
    p.add_argument("--accum", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log-every", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    train(p.parse_args())
