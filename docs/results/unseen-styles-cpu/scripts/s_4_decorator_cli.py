"""A hand-written typer-like CLI: `@app.command()` registers a function whose keyword defaults and annotations
become `--options` (underscores as dashes), parsed by `app()` from sys.argv with inspect.signature. The worker count
is `num_workers: int = 0` in the command's signature. Correct edit: `--num-workers N` on the command line."""
import inspect
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class App:
    def __init__(self):
        self.commands = {}

    def command(self):
        def deco(fn):
            self.commands[fn.__name__.replace("_", "-")] = fn
            return fn
        return deco

    def __call__(self, argv=None):
        argv = list(sys.argv[1:] if argv is None else argv)
        name = argv.pop(0) if argv and not argv[0].startswith("-") else next(iter(self.commands))
        fn = self.commands[name]
        sig = inspect.signature(fn)
        kwargs = {}
        while argv:
            key = argv.pop(0)
            pname = key.lstrip("-").replace("-", "_")
            if "=" in pname:
                pname, val = pname.split("=", 1)
            else:
                val = argv.pop(0)
            kwargs[pname] = sig.parameters[pname].annotation(val)
        return fn(**kwargs)


app = App()


class Windows(Dataset):
    def __init__(self, n=720, w=48):
        t = np.linspace(0, 60, n + w, dtype=np.float32)
        self.sig = np.sin(t) + 0.1 * np.random.default_rng(3).standard_normal(n + w).astype(np.float32)
        self.n, self.w = n, w

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.sig[i:i + self.w]
        spec = np.abs(np.fft.rfft(np.outer(x, x), axis=1))[:, :8].mean(0)  # numpy per-item cost
        time.sleep(0.0005)
        return torch.from_numpy(np.concatenate([x, spec]).astype(np.float32)), torch.tensor(self.sig[i + self.w - 1] * 0.5)


@app.command()
def train(epochs: int = 3, batch_size: int = 32, num_workers: int = 0, lr: float = 1e-3):
    torch.manual_seed(0)
    loader = DataLoader(Windows(), batch_size=batch_size, shuffle=True, num_workers=num_workers)
    model = nn.Sequential(nn.Linear(56, 128), nn.GELU(), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(1, epochs + 1):
        tot, steps = 0.0, 0
        for x, y in loader:
            pred = model(x).squeeze(-1)
            loss = nn.functional.mse_loss(pred, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            steps += 1
        print(f"epoch {epoch} steps {steps} mse {tot / steps:.5f}")


@app.command()
def evaluate(checkpoint: str = "none"):
    print("nothing to evaluate", checkpoint)


if __name__ == "__main__":
    app()
