"""Train for a fixed wall-clock budget rather than a number of epochs (the "everyone gets N minutes" benchmark
habit): the loop checks time.perf_counter() against a deadline before each step, breaks out mid-epoch when the
budget is spent, then reports how many steps and samples it managed and evaluates. Epochs are passes over the
loader until time runs out; --max-epochs caps them in case the machine is fast."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Sequences(Dataset):
    """Sum-of-sines sequences; the target is the next value. Each item is synthesised and smoothed on access."""

    def __init__(self, n, length=96, seed=0):
        rng = np.random.default_rng(seed)
        self.freqs = rng.uniform(0.5, 6.0, (n, 3)).astype(np.float32)
        self.phase = rng.uniform(0, 2 * np.pi, (n, 3)).astype(np.float32)
        self.length = length

    def __len__(self):
        return len(self.freqs)

    def __getitem__(self, i):
        t = np.linspace(0, 1, self.length + 1, dtype=np.float32)
        s = np.sin(2 * np.pi * self.freqs[i][:, None] * t[None] + self.phase[i][:, None]).sum(0)
        for _ in range(25):
            s = np.convolve(s, np.array([0.2, 0.6, 0.2], dtype=np.float32), mode="same")
        s = s.astype(np.float32)
        return torch.from_numpy(s[:-1]).unsqueeze(-1), torch.tensor(s[-1:])


class GRUForecaster(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.rnn = nn.GRU(1, hidden, batch_first=True, num_layers=2)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h[:, -1])


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=12.0, help="training time budget in seconds")
    ap.add_argument("--max-epochs", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1)
    return ap.parse_args()


def main():
    args = parse()
    torch.manual_seed(0)
    loader = DataLoader(Sequences(1536), batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    val = Sequences(256, seed=1)
    model = GRUForecaster()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.MSELoss()

    t_start = time.perf_counter()
    deadline = t_start + args.budget
    step, samples, out_of_time = 0, 0, False
    for epoch in range(args.max_epochs):
        ep_loss, ep_steps = 0.0, 0
        for x, y in loader:
            if time.perf_counter() >= deadline:
                out_of_time = True
                break
            pred = model(x)
            loss = loss_fn(pred, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            ep_loss += loss.item()
            ep_steps += 1
            step += 1
            samples += x.shape[0]
        if ep_steps:
            print(f"epoch {epoch}: {ep_steps} steps, mean loss {ep_loss / ep_steps:.5f}"
                  + (" (cut by the time budget)" if out_of_time else ""), flush=True)
        if out_of_time:
            break
    elapsed = time.perf_counter() - t_start
    print(f"budget {args.budget:.0f}s: {step} steps, {samples} samples, {samples / elapsed:.0f} samples/s")

    model.eval()
    with torch.no_grad():
        xs, ys = zip(*(val[i] for i in range(len(val))))
        val_loss = loss_fn(model(torch.stack(xs)), torch.stack(ys)).item()
    print(f"val mse {val_loss:.5f}")


if __name__ == "__main__":
    main()
