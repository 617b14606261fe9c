"""Multi-task model: shared trunk, two heads (classification + regression), losses kept in a dict and summed,
per-task loss weights, each task's loss logged per epoch. Loader built inline with num_workers=2."""
import argparse
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class TwoTaskShapes(Dataset):
    def __init__(self, n=2000, size=32):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.normal(0, 0.3, (3, self.size, self.size)).astype(np.float32)
        cls = int(rng.integers(0, 4))
        radius = float(rng.uniform(3, 12))
        yy, xx = np.mgrid[0:self.size, 0:self.size]
        cy, cx = rng.uniform(8, 24, 2)
        mask = ((yy - cy) ** 2 + (xx - cx) ** 2) < radius ** 2
        img[cls % 3][mask] += 1.0
        for _ in range(6):  # some smoothing: CPU work in the worker
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2)) / 3.0
        return torch.from_numpy(img), {"cls": cls, "radius": np.float32(radius / 12.0)}


class MultiTaskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.heads = nn.ModuleDict({"cls": nn.Linear(512, 4), "radius": nn.Linear(512, 1)})

    def forward(self, x):
        h = self.trunk(x)
        return {k: head(h) for k, head in self.heads.items()}


def compute_losses(out, target):
    return {"cls": F.cross_entropy(out["cls"], target["cls"]),
            "radius": F.mse_loss(out["radius"].squeeze(1), target["radius"])}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--bs", type=int, default=32)
    args = p.parse_args()
    torch.manual_seed(0)
    weights = {"cls": 1.0, "radius": 0.5}
    loader = DataLoader(TwoTaskShapes(), batch_size=args.bs, shuffle=True, num_workers=2)
    model = MultiTaskNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        totals = {k: 0.0 for k in weights}
        nb = 0
        for x, target in loader:
            out = model(x)
            losses = compute_losses(out, target)
            loss = sum(weights[k] * v for k, v in losses.items())
            opt.zero_grad()
            loss.backward()
            opt.step()
            for k, v in losses.items():
                totals[k] += v.item()
            nb += 1
        print(f"epoch {epoch} batches {nb} " + " ".join(f"{k}={v / nb:.4f}" for k, v in totals.items())
              + f" loss={sum(weights[k] * totals[k] / nb for k in weights):.4f}")


if __name__ == "__main__":
    main()
