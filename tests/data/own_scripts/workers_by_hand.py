"""Options read by hand from sys.argv over a dict of defaults (`--workers=2`), no argparse; each sample gets numpy
noise, which torch seeds anew in each worker. Unseen k_5: the edit `persistent_workers=True` broke `--workers=0`."""
import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

DEFAULTS = {"workers": 1, "epochs": 3, "samples": 768}


class Noisy(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 8), torch.randn(n, 1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        noise = torch.from_numpy(np.random.normal(0, 0.1, 8).astype("float32"))
        return self.x[i] + noise, self.y[i]


def main(cfg):
    torch.manual_seed(0)
    loader = DataLoader(Noisy(cfg["samples"]), batch_size=16, shuffle=True, num_workers=cfg["workers"])
    print(f"{loader.num_workers} worker(s), persistent {loader.persistent_workers}", flush=True)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(cfg["epochs"]):
        batches = 0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            batches += 1
        print(f"epoch {epoch}: {batches} batches, loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    cfg = dict(DEFAULTS)
    for arg in sys.argv[1:]:
        key, _, value = arg.lstrip("-").partition("=")
        cfg[key] = int(value)
    main(cfg)
