"""Two-stage training, as in self-supervised / transfer-learning repos: pre-train an encoder on a large unlabelled
set (a denoising objective, its own loader with batch 64 and --pretrain-workers), then fine-tune encoder + head on a
small labelled set with a different loader (batch 16, --finetune-workers). Each stage is its own function with its
own epoch loop; the encoder is handed from one to the other."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class UnlabelledSeries(Dataset):
    """Random-walk series, smoothed per item: the pre-training data."""

    def __init__(self, n, length=128):
        self.n, self.length = n, length

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(1_000_003 + i)
        x = torch.randn(self.length, generator=g).cumsum(0) / 8
        for _ in range(40):
            x = 0.5 * x + 0.25 * (x.roll(1) + x.roll(-1))
        x = (x - x.mean()) / (x.std() + 1e-6)
        return x.unsqueeze(0)


class LabelledSeries(Dataset):
    """Series with a class-dependent frequency, heavier per-item work (resampling + smoothing)."""

    def __init__(self, n, length=128):
        self.n, self.length = n, length

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(7 + i)
        y = int(torch.randint(0, 5, (1,), generator=g))
        t = torch.linspace(0, 1, self.length)
        x = torch.sin(2 * torch.pi * (y + 2) * t) + 0.6 * torch.randn(self.length, generator=g)
        for _ in range(120):
            x = 0.5 * x + 0.25 * (x.roll(1) + x.roll(-1))
        return x.unsqueeze(0), y


class Encoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, width, 5, padding=2), nn.GELU(),
                                 nn.Conv1d(width, width, 5, padding=2), nn.GELU())

    def forward(self, x):
        return self.net(x)


def pretrain(encoder, args):
    loader = DataLoader(UnlabelledSeries(args.pretrain_n), batch_size=64, shuffle=True,
                        num_workers=args.pretrain_workers, drop_last=True)
    decoder = nn.Conv1d(32, 1, 1)
    params = list(encoder.parameters()) + list(decoder.parameters())
    opt = torch.optim.AdamW(params, lr=2e-3)
    for epoch in range(args.pretrain_epochs):
        t0, total, n = time.perf_counter(), 0.0, 0
        for x in loader:
            noisy = x + 0.3 * torch.randn_like(x)
            loss = F.mse_loss(decoder(encoder(noisy)), x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        print(f"pretrain epoch {epoch} loss {total / n:.4f} batches {n} ({time.perf_counter() - t0:.1f}s)",
              flush=True)
    return encoder


def finetune(encoder, args):
    loader = DataLoader(LabelledSeries(args.finetune_n), batch_size=16, shuffle=True,
                        num_workers=args.finetune_workers)
    model = nn.Sequential(encoder, nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 5))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.finetune_epochs):
        t0, total, correct, seen, n = time.perf_counter(), 0.0, 0, 0, 0
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
            n += 1
        print(f"finetune epoch {epoch} loss {total / n:.4f} acc {correct / seen:.3f} batches {n} "
              f"({time.perf_counter() - t0:.1f}s)", flush=True)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pretrain-epochs", type=int, default=3)
    p.add_argument("--finetune-epochs", type=int, default=3)
    p.add_argument("--pretrain-n", type=int, default=4096)
    p.add_argument("--finetune-n", type=int, default=1280)
    p.add_argument("--pretrain-workers", type=int, default=2)
    p.add_argument("--finetune-workers", type=int, default=1)
    args = p.parse_args()
    torch.manual_seed(0)
    encoder = pretrain(Encoder(), args)
    finetune(encoder, args)


if __name__ == "__main__":
    main()
