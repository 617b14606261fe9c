"""Hand-written progress wrapper (tqdm-like generator) around the loader."""
import argparse, sys, time
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader


def progress(it, total=None, every=10, desc="train"):
    t0 = time.time()
    for i, x in enumerate(it):
        if i % every == 0:
            rate = i / max(time.time() - t0, 1e-9)
            sys.stdout.write(f"\r{desc} {i}/{total} ({rate:.1f} it/s)")
            sys.stdout.flush()
        yield x
    sys.stdout.write("\n")


class NoisyVectors(Dataset):
    def __init__(self, n=4000, dim=256, seed=0):
        rng = np.random.RandomState(seed)
        self.x = rng.randn(n, dim).astype(np.float32)
        self.w = rng.randn(dim, 10).astype(np.float32)
        self.y = (self.x @ self.w).argmax(1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i].copy()
        # simulated per-sample preprocessing: FFT-based smoothing + jitter
        for _ in range(20):
            f = np.fft.rfft(x)
            f[40:] *= 0.9
            x = np.fft.irfft(f, n=x.shape[0]).astype(np.float32)
        x += np.random.normal(0, 0.05, x.shape).astype(np.float32)
        return torch.from_numpy(x), int(self.y[i])


def main():
    parser = argparse.ArgumentParser(description="progress-wrapper style")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--bs", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = "cpu"
    train_set = NoisyVectors()
    train_loader = DataLoader(train_set, batch_size=args.bs, shuffle=True,
                              num_workers=args.workers, drop_last=True)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        start = time.time()
        seen = 0
        for step, (x, y) in enumerate(progress(train_loader, total=len(train_loader))):
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss = loss_fn(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += 1
        print(f"Epoch {epoch} | batches {seen} (step={step}) | loss {loss.item():.4f} | {time.time() - start:.2f}s")


if __name__ == "__main__":
    main()
