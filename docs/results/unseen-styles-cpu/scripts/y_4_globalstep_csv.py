"""Step-centric logging: a global_step counter, LambdaLR (linear warmup + cosine) stepped per batch,
clip_grad_norm_, a CSV row every LOG_EVERY steps written to /tmp, and an epoch summary. Dataset is a
time-series sliding window over a synthetic multichannel signal with per-window normalisation + features."""
import csv
import math
import os
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

EPOCHS = 3
BATCH = 64
LOG_EVERY = 10
WINDOW = 128
LOG_PATH = "/tmp/y4_steps.csv"


class SlidingWindows(Dataset):
    def __init__(self, length=60000, channels=6, stride=16):
        rng = np.random.default_rng(0)
        t = np.arange(length)
        self.sig = np.stack([np.sin(t / (7 + 3 * c)) + 0.3 * rng.normal(size=length) for c in range(channels)]).astype(np.float32)
        self.starts = np.arange(0, length - WINDOW - 1, stride)

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        s = self.starts[i]
        w = self.sig[:, s:s + WINDOW].copy()
        w = (w - w.mean(1, keepdims=True)) / (w.std(1, keepdims=True) + 1e-5)
        spec = np.abs(np.fft.rfft(w, axis=1))[:, :32]
        feats = np.concatenate([w, np.log1p(spec)], axis=1)
        for _ in range(70):  # rolling statistics: CPU work per window
            feats = feats + 0.01 * np.tanh(np.cumsum(feats, axis=1) / (1 + np.arange(feats.shape[1])))
        target = self.sig[0, s + WINDOW]
        return torch.from_numpy(feats.astype(np.float32)), torch.tensor(target)


def lr_lambda_factory(warmup, total):
    def f(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))
    return f


def main():
    torch.manual_seed(0)
    ds = SlidingWindows()
    dl = DataLoader(ds, BATCH, True, num_workers=3, pin_memory=False)
    model = nn.Sequential(nn.Conv1d(6, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 32, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(8), nn.Flatten(), nn.Linear(256, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    total = EPOCHS * len(dl)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda_factory(total // 10, total))
    global_step = 0
    if os.path.exists(LOG_PATH):
        os.remove(LOG_PATH)
    with open(LOG_PATH, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", "epoch", "lr", "loss", "grad_norm"])
        for epoch in range(EPOCHS):
            ep_loss, nb = 0.0, 0
            for x, y in dl:
                pred = model(x).squeeze(1)
                loss = nn.functional.mse_loss(pred, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                global_step += 1
                ep_loss += loss.item()
                nb += 1
                if global_step % LOG_EVERY == 0:
                    writer.writerow([global_step, epoch, f"{sched.get_last_lr()[0]:.6f}", f"{loss.item():.5f}", f"{gn:.4f}"])
            print(f"epoch={epoch} global_step={global_step} batches={nb} mse={ep_loss / nb:.5f}")


if __name__ == "__main__":
    main()
