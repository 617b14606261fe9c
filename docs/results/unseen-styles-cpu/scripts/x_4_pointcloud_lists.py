"""Point-cloud / graph style (PointNet-ish, as in repos that avoid padding): each item is a cloud with a VARIABLE
number of points (200-600), normalised and randomly rotated in numpy in __getitem__; a custom `collate_clouds` returns
LISTS (a list of [N_i, 3] tensors and a label tensor), and the model loops over the clouds in the batch, max-pooling
each. The DataLoader is built inside `with torch.device("cpu"):` in a `build_loader(cfg)` function, the config being
a module-level `CONFIG = {"loader": {"batch_size": 16, "workers": 0}, "epochs": 3}` with `--workers` overriding it via
argparse (`default=CONFIG["loader"]["workers"]`).

A correct report: the loop is main()'s `for it, (clouds, labels) in enumerate(loader):`; 3 epochs of 30 batches (480
clouds, batch 16); the count is 0 from CONFIG["loader"]["workers"] through `--workers` (default): the edit is
`--workers N` on the command line (or the dict's "workers" value).
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

CONFIG = {"loader": {"batch_size": 16, "workers": 0}, "epochs": 3, "lr": 1e-3, "n_clouds": 480}


class Clouds(Dataset):
    def __init__(self, n):
        self.labels = np.random.default_rng(1).integers(0, 4, n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = int(self.labels[i])
        n = int(g.integers(200, 600))
        if y == 0:
            p = g.standard_normal((n, 3))
            p /= np.linalg.norm(p, axis=1, keepdims=True)
        elif y == 1:
            p = g.uniform(-1, 1, (n, 3))
        elif y == 2:
            t = g.uniform(0, 2 * math.pi, n)
            p = np.stack([np.cos(t), np.sin(t), g.uniform(-1, 1, n)], 1)
        else:
            p = g.standard_normal((n, 3)) * [1.0, 0.3, 0.1]
        a = g.uniform(0, 2 * math.pi)
        rot = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
        p = (p @ rot.T) + 0.02 * g.standard_normal((n, 3))
        p = p - p.mean(0)
        p = p / np.abs(p).max()
        # k-nearest-neighbour density feature (stands for the per-item preprocessing such repos do)
        d = ((p[:64, None, :] - p[None, :, :]) ** 2).sum(-1)
        _ = np.sort(d, axis=1)[:, :8]
        time.sleep(0.002)
        return torch.from_numpy(p.astype(np.float32)), y


def collate_clouds(batch):
    clouds = [c for c, _ in batch]
    labels = torch.tensor([y for _, y in batch])
    return clouds, labels


class PointNetLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.point_mlp = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, clouds):
        feats = [self.point_mlp(c).max(0).values for c in clouds]
        return self.head(torch.stack(feats))


def build_loader(cfg, workers):
    with torch.device("cpu"):
        ds = Clouds(cfg["n_clouds"])
        return DataLoader(ds, batch_size=cfg["loader"]["batch_size"], shuffle=True,
                          num_workers=workers, collate_fn=collate_clouds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=CONFIG["loader"]["workers"])
    ap.add_argument("--epochs", type=int, default=CONFIG["epochs"])
    args = ap.parse_args()
    torch.manual_seed(0)
    loader = build_loader(CONFIG, args.workers)
    model = PointNetLite()
    opt = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    print(f"workers={args.workers} batches={len(loader)}")
    for epoch in range(args.epochs):
        tot = 0.0
        for it, (clouds, labels) in enumerate(loader):
            loss = F.cross_entropy(model(clouds), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        print(f"epoch {epoch}: loss {tot / (it + 1):.4f} over {it + 1} batches")


if __name__ == "__main__":
    main()
