"""U-Net-like segmentation with a joint image/mask transform (same random flip/rotate/crop applied to both),
Dice+BCE loss, and the training loop written as a generator `train_epochs(...)` that yields a metrics dict
per epoch; main() consumes it with a for loop. The Dataset caches the rendered base scene in a dict on first
access (so later epochs do less work). Loader built with num_workers from a constant NUM_WORKERS = 2."""
import random
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

NUM_WORKERS = 2
SIZE = 48


class Blobs(Dataset):
    def __init__(self, n=1100):
        self.n = n
        self.cache = {}

    def __len__(self):
        return self.n

    def _render(self, i):
        if i in self.cache:
            return self.cache[i]
        rng = np.random.default_rng(i)
        yy, xx = np.mgrid[0:SIZE + 8, 0:SIZE + 8]
        mask = np.zeros((SIZE + 8, SIZE + 8), bool)
        for _ in range(rng.integers(1, 4)):
            cy, cx, r = rng.uniform(8, SIZE, 2).tolist() + [rng.uniform(4, 10)]
            mask |= ((yy - cy) ** 2 + (xx - cx) ** 2) < r ** 2
        img = mask.astype(np.float32) * 0.8 + rng.normal(0, 0.4, mask.shape).astype(np.float32)
        self.cache[i] = (img, mask.astype(np.float32))
        return self.cache[i]

    def __getitem__(self, i):
        img, mask = self._render(i)
        k = random.randint(0, 3)
        img, mask = np.rot90(img, k), np.rot90(mask, k)
        if random.random() < 0.5:
            img, mask = img[:, ::-1], mask[:, ::-1]
        oy, ox = random.randint(0, 8), random.randint(0, 8)
        img = img[oy:oy + SIZE, ox:ox + SIZE].copy()
        mask = mask[oy:oy + SIZE, ox:ox + SIZE].copy()
        for _ in range(8):  # image-only photometric smoothing (CPU work each access)
            img = 0.6 * img + 0.2 * np.roll(img, 1, 0) + 0.2 * np.roll(img, 1, 1)
            img = img + 0.02 * np.sin(img * 3.0)
        return torch.from_numpy(img[None]).float(), torch.from_numpy(mask[None])


def block(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.ReLU(), nn.Conv2d(o, o, 3, padding=1), nn.ReLU())


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1, self.d2 = block(1, 8), block(8, 16)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.u1 = block(16, 8)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        return self.out(self.u1(torch.cat([self.up(b), a], 1)))


def dice_bce(logits, target):
    p = torch.sigmoid(logits)
    dice = 1 - (2 * (p * target).sum() + 1) / (p.sum() + target.sum() + 1)
    return dice + F.binary_cross_entropy_with_logits(logits, target)


def train_epochs(model, loader, opt, n_epochs):
    for epoch in range(n_epochs):
        tot, nb = 0.0, 0
        for img, mask in loader:
            loss = dice_bce(model(img), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            nb += 1
        yield {"epoch": epoch, "batches": nb, "loss": tot / nb}


def main():
    random.seed(0)
    torch.manual_seed(0)
    loader = DataLoader(Blobs(), batch_size=16, shuffle=True, num_workers=NUM_WORKERS)
    model = TinyUNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for metrics in train_epochs(model, loader, opt, n_epochs=3):
        print("epoch {epoch} batches {batches} loss {loss:.4f}".format(**metrics))


if __name__ == "__main__":
    main()
