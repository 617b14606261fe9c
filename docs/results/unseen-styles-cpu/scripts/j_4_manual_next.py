"""Step-budgeted training with a hand-driven iterator (as in many diffusion / GAN / RL-style repos): `batch = next(it)`,
a fresh `iter(loader)` on StopIteration (one epoch more), evaluation every --eval-every steps on a held-out loader.
Task: denoise 1-D signals (a small conv autoencoder); each sample is corrupted in __getitem__."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisySignals(Dataset):
    def __init__(self, n, length=512, seed=0):
        self.n, self.length, self.seed = n, length, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        t = torch.linspace(0, 1, self.length)
        clean = torch.zeros(self.length)
        for _ in range(40):                    # a sum of random damped oscillators
            f, a, d = torch.rand(3, generator=g)
            clean += a * torch.exp(-4 * d * t) * torch.sin(2 * torch.pi * (2 + 30 * f) * t)
        clean = clean / clean.abs().max()
        noisy = clean.clone()
        for _ in range(30):                    # bursts of impulsive noise, placed one at a time
            k = int(torch.randint(0, self.length - 8, (1,), generator=g))
            noisy[k:k + 8] += 0.5 * torch.randn(8, generator=g)
        noisy += 0.1 * torch.randn(self.length, generator=g)
        return noisy.unsqueeze(0), clean.unsqueeze(0)


class DenoiseNet(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv1d(1, ch, 9, padding=4), nn.GELU(), nn.Conv1d(ch, ch, 9, stride=2, padding=4),
                                 nn.GELU())
        self.dec = nn.Sequential(nn.ConvTranspose1d(ch, ch, 4, stride=2, padding=1), nn.GELU(),
                                 nn.Conv1d(ch, 1, 9, padding=4))

    def forward(self, x):
        return x + self.dec(self.enc(x))


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total, n = 0.0, 0
    for noisy, clean in loader:
        total += F.mse_loss(model(noisy), clean, reduction="sum").item() / noisy.shape[-1]
        n += noisy.shape[0]
    model.train()
    return total / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--eval-every", type=int, default=150)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--train-size", type=int, default=2560)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    train_loader = DataLoader(NoisySignals(args.train_size, seed=1), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, drop_last=True)
    val_loader = DataLoader(NoisySignals(256, seed=2), batch_size=128)
    model = DenoiseNet()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    epoch, it = 0, iter(train_loader)
    running, t0 = 0.0, time.time()
    for step in range(1, args.steps + 1):
        try:
            noisy, clean = next(it)
        except StopIteration:
            epoch += 1
            it = iter(train_loader)
            noisy, clean = next(it)
        loss = F.mse_loss(model(noisy), clean)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()
        if step % args.log_every == 0:
            print(f"step {step:5d} | epoch {epoch} | train mse {running / args.log_every:.5f} | "
                  f"{time.time() - t0:.1f}s", flush=True)
            running = 0.0
        if step % args.eval_every == 0:
            print(f"step {step:5d} | val mse {evaluate(model, val_loader):.5f}", flush=True)
    print(f"finished {args.steps} steps, {epoch + 1} epoch(s) started, {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
