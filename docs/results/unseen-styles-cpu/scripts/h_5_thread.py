"""Training in a background thread: main() starts a worker thread that trains and reports progress through a
queue, then polls the queue and prints each message (the shape of GUI/notebook/service front-ends that keep
the main thread free, e.g. for a heartbeat or a web endpoint)."""
import argparse
import queue
import threading
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class NoisyPolynomials(Dataset):
    """Regression: y = p(x) for a random cubic per item; __getitem__ evaluates it densely (CPU work)."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        coeffs = torch.randn(4, generator=g)
        xs = torch.linspace(-1, 1, 2048)
        ys = coeffs[0] + coeffs[1] * xs + coeffs[2] * xs ** 2 + coeffs[3] * xs ** 3
        for _ in range(70):  # "sensor smoothing": the per-item CPU cost
            ys = 0.5 * ys + 0.5 * torch.cumsum(ys, 0) / torch.arange(1, 2049)
        sample = ys[::32] + 0.05 * torch.randn(64, generator=g)
        return sample, coeffs


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 256), nn.SiLU(), nn.Linear(256, 256), nn.SiLU(), nn.Linear(256, 4))

    def forward(self, x):
        return self.net(x)


def train_worker(args, progress, stop):
    """Runs in the background thread; every message goes through `progress`."""
    try:
        torch.manual_seed(args.seed)
        loader = DataLoader(NoisyPolynomials(args.samples, args.seed), batch_size=args.batch_size, shuffle=True,
                            num_workers=args.workers)
        model = Regressor()
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        criterion = nn.MSELoss()
        for epoch in range(args.epochs):
            total, count = 0.0, 0
            for x, target in loader:
                if stop.is_set():
                    progress.put(("stopped", epoch))
                    return
                pred = model(x)
                loss = criterion(pred, target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item()
                count += 1
                if count % 10 == 0:
                    progress.put(("step", epoch, count, loss.item()))
            progress.put(("epoch", epoch, total / count, count))
        progress.put(("done",))
    except Exception as err:  # surfaced to the main thread, which decides the exit code
        progress.put(("error", repr(err)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="DataLoader worker processes")
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print every 10th step too")
    args = parser.parse_args()

    progress, stop = queue.Queue(), threading.Event()
    thread = threading.Thread(target=train_worker, args=(args, progress, stop), name="trainer", daemon=True)
    started = time.time()
    thread.start()
    status = 1
    try:
        while True:
            try:
                msg = progress.get(timeout=0.5)
            except queue.Empty:
                if not thread.is_alive():
                    print("trainer thread died without a message")
                    break
                continue
            kind = msg[0]
            if kind == "step" and args.verbose:
                print(f"  epoch {msg[1]} step {msg[2]} loss {msg[3]:.4f}")
            elif kind == "epoch":
                print(f"epoch {msg[1]} loss {msg[2]:.4f} batches {msg[3]} [{time.time() - started:.1f}s]", flush=True)
            elif kind == "error":
                print(f"training failed: {msg[1]}")
                break
            elif kind in ("done", "stopped"):
                status = 0
                break
    except KeyboardInterrupt:
        stop.set()
    thread.join(timeout=10)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
