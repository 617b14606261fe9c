"""Training loop written as `while True:` over iter(loader) with StopIteration handling per epoch;
DataLoader built with timeout=30 and num_workers=1; a small autoencoder."""
import time
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Blobs(Dataset):
    def __init__(self, n=1600, size=28):
        self.n, self.size = n, size
        yy, xx = np.mgrid[0:size, 0:size]
        self.grid = (yy.astype(np.float32), xx.astype(np.float32))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(7 * i + 1)
        yy, xx = self.grid
        img = np.zeros((self.size, self.size), np.float32)
        for _ in range(40):  # render 40 gaussian blobs: CPU work
            cy, cx, s = rng.uniform(0, self.size), rng.uniform(0, self.size), rng.uniform(1, 3)
            img += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s * s))
        img /= img.max() + 1e-6
        return torch.from_numpy(img).flatten()


def main(epochs=4, bs=32):
    torch.manual_seed(0)
    loader = DataLoader(Blobs(), batch_size=bs, shuffle=True, num_workers=1, timeout=30)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 32), nn.ReLU(),
                          nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 784), nn.Sigmoid())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    mse = nn.MSELoss()
    epoch = 0
    it = iter(loader)
    running, nb, t0 = 0.0, 0, time.time()
    while True:
        try:
            x = next(it)
        except StopIteration:
            print(f"epoch {epoch} batches {nb} loss {running / nb:.5f} ({time.time() - t0:.1f}s)")
            epoch += 1
            if epoch == epochs:
                break
            it = iter(loader)
            running, nb, t0 = 0.0, 0, time.time()
            continue
        recon = model(x)
        loss = mse(recon, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        nb += 1


if __name__ == "__main__":
    main()
