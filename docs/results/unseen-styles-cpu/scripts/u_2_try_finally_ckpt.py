"""Preemption-safe step loop (seen in long-running jobs on shared clusters): each epoch's
`for batch in loader:` runs inside `try: ... finally:` so that a checkpoint is written with `torch.save` even when the
job is interrupted, plus one every `SAVE_EVERY` steps. Batches are dicts. The worker count is sized from the CPU mask
inline in the call: `num_workers=max(0, len(os.sched_getaffinity(0)) - 1)` (1 on a 2-core machine), no flag.

A correct report: the loop is fit()'s `for batch in loader:`; each of the 4 epochs keeps 30 batches; the count comes
from the expression on the DataLoader's line (the edit: replace it there); no command-line option sets it.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

CKPT = "/tmp/u2_ckpt.pt"
SAVE_EVERY = 25


class Spectra(Dataset):
    def __init__(self, n=960, length=256):
        self.n, self.length = n, length

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        label = i % 5
        t = np.linspace(0, 1, self.length)
        sig = np.sin(2 * np.pi * (3 + 4 * label) * t) + 0.8 * g.standard_normal(self.length)
        spec = np.abs(np.fft.rfft(np.convolve(sig, np.ones(9) / 9, mode="same")))
        time.sleep(0.004)
        return {"x": torch.tensor(np.log1p(spec[:128]), dtype=torch.float32), "y": torch.tensor(label)}


def save(model, opt, step, epoch):
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "epoch": epoch}, CKPT)


def fit(model, opt, loader, epochs):
    step = 0
    for epoch in range(epochs):
        t0, losses = time.perf_counter(), []
        try:
            for batch in loader:
                logits = model(batch["x"])
                loss = F.cross_entropy(logits, batch["y"])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses.append(loss.item())
                step += 1
                if step % SAVE_EVERY == 0:
                    save(model, opt, step, epoch)
        finally:
            save(model, opt, step, epoch)
        print(f"epoch {epoch}: loss {np.mean(losses):.4f} over {len(losses)} batches "
              f"({time.perf_counter() - t0:.1f}s, step {step})")


def main():
    torch.manual_seed(0)
    loader = DataLoader(Spectra(), batch_size=32, shuffle=True, num_workers=max(0, len(os.sched_getaffinity(0)) - 1))
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    fit(model, opt, loader, epochs=4)
    os.remove(CKPT)


if __name__ == "__main__":
    main()
