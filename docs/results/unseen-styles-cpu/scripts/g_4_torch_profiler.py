"""The PyTorch-tutorial habit: the training loop runs inside torch.profiler.profile with a schedule, calling
prof.step() every batch and writing a trace once the schedule's active steps are over."""
import argparse
import os
import tempfile

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 1, 28, 28)
        self.y = torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        img = self.x[i]
        for _ in range(6):
            img = torch.nn.functional.avg_pool2d(img[None], 3, 1, 1)[0]
        return img, self.y[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--num-workers", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Slow(6000), batch_size=64, shuffle=True, num_workers=args.num_workers)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters())
    traces = tempfile.mkdtemp(prefix="g4-trace-")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=5, warmup=2, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(os.path.join(traces, "trace.json"))) as prof:
        for epoch in range(args.epochs):
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                prof.step()
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    print("trace written:", os.path.exists(os.path.join(traces, "trace.json")))


if __name__ == "__main__":
    main()
