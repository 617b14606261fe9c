"""Diffusion-style step loop: an endless generator (`yield from loader` in a while True) feeds a fixed number of
optimisation steps, with an EMA of the weights; there are no epochs in the loop."""
import argparse
import copy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Noised(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 64, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        t = torch.rand(())
        noise = torch.randn_like(x)
        for _ in range(20):  # a deliberately slow corruption schedule
            noise = 0.999 * noise + 0.001 * torch.randn_like(x)
        return (1 - t) * x + t * noise, t, noise


def endless(loader):
    while True:
        yield from loader


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--num-workers", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=None, help="ignored; the run is sized by --steps")
    args = ap.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Noised(8192), batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
                        drop_last=True)
    net = nn.Sequential(nn.Linear(65, 256), nn.SiLU(), nn.Linear(256, 64))
    ema = copy.deepcopy(net).requires_grad_(False)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    data = endless(loader)
    for step in range(args.steps):
        xt, t, noise = next(data)
        pred = net(torch.cat([xt, t[:, None]], 1))
        loss = ((pred - noise) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), net.parameters()):
                pe.lerp_(p, 0.01)
        if step % 250 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    print(f"done {args.steps} steps, {len(loader)} batches an epoch")


if __name__ == "__main__":
    main()
