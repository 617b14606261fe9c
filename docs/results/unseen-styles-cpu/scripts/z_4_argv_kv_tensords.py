"""Hyperparameters read from sys.argv[1:] by hand (key=value, no argparse). A TensorDataset wrapped in a
Dataset that adds CPU-heavy noise augmentation. Loop uses enumerate(loader, start=1)."""
import sys
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

cfg = {"epochs": 3, "bs": 50, "workers": 0, "lr": 1e-3, "n": 2000}
for arg in sys.argv[1:]:
    k, v = arg.split("=", 1)
    cfg[k] = type(cfg[k])(v)


class NoiseAug(Dataset):
    def __init__(self, base, sigma=0.1):
        self.base, self.sigma = base, sigma

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        x, y = self.base[i]
        a = x.numpy().copy()
        rng = np.random.default_rng()
        for _ in range(10):  # several rounds of jitter + renormalisation
            a = a + rng.normal(0, self.sigma, a.shape).astype(np.float32)
            a = (a - a.mean()) / (a.std() + 1e-6)
            a = np.tanh(a) * 1.5
        return torch.from_numpy(a.astype(np.float32)), y


def build():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(cfg["n"], 2048, generator=g)
    w = torch.randn(2048, generator=g)
    Y = (X @ w > 0).long()
    return NoiseAug(TensorDataset(X, Y))


torch.manual_seed(0)
dl = DataLoader(build(), cfg["bs"], True, num_workers=cfg["workers"])
net = nn.Sequential(nn.Linear(2048, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 2))
opt = torch.optim.Adam(net.parameters(), lr=cfg["lr"])
lossf = nn.CrossEntropyLoss()


def run():
    for ep in range(cfg["epochs"]):
        acc_loss = 0.0
        for step, (xb, yb) in enumerate(dl, start=1):
            opt.zero_grad()
            l = lossf(net(xb), yb)
            l.backward()
            opt.step()
            acc_loss += l.item()
        print(f"ep={ep} steps={step} loss={acc_loss / step:.4f}")


if __name__ == "__main__":
    run()
