"""Step-budgeted training: while step < max_steps around the epoch loop, break mid-epoch, per-batch LR schedule."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Patches(Dataset):
    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.base = torch.randn(n, 3, 24, 24, generator=g)
        self.y = (self.base.mean((1, 2, 3)) > 0).long()

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        img = self.base[i]
        # per-item "augmentation": blur + local contrast normalisation, done the slow way
        k = torch.ones(3, 1, 3, 3) / 9.0
        for _ in range(20):
            img = F.conv2d(img.unsqueeze(0), k, padding=1, groups=3).squeeze(0)
        img = (img - img.mean((1, 2), keepdim=True)) / (img.std((1, 2), keepdim=True) + 1e-5)
        return img, self.y[i]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 6 * 6, 2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def train(args):
    torch.manual_seed(args.seed)
    ds = Patches(args.n)
    loader = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers, pin_memory=False)
    model = SmallCNN()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.max_steps)
    step, epoch = 0, 0
    t0 = time.time()
    while step < args.max_steps:
        tot, nb = 0.0, 0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            tot += loss.item()
            nb += 1
            if step >= args.max_steps:
                break
        print(f"epoch {epoch} loss {tot / nb:.4f} batches {nb} step {step} lr {sched.get_last_lr()[0]:.2e}")
        epoch += 1
    print(f"done: {step} steps in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=440)   # 125 batches an epoch: about 3.5 epochs
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    train(ap.parse_args())
