"""class Experiment whose __call__ runs training, created via Experiment(**vars(args))().
Gradient accumulation (loss / accum, step when (i + 1) % accum == 0) and a torch.no_grad() metric per batch."""
import argparse
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Patches(Dataset):
    def __init__(self, n=1536, size=24):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(1000 + i)
        y = int(rng.integers(0, 3))
        img = rng.random((self.size, self.size), dtype=np.float32)
        if y == 1:
            img[:, ::4] += 1.0
        elif y == 2:
            img[::4, :] += 1.0
        # local binary pattern style descriptor: CPU work in __getitem__
        for _ in range(8):
            c = img[1:-1, 1:-1]
            code = ((img[:-2, 1:-1] > c).astype(np.float32) + (img[2:, 1:-1] > c) * 2
                    + (img[1:-1, :-2] > c) * 4 + (img[1:-1, 2:] > c) * 8)
            img = img.copy()
            img[1:-1, 1:-1] = 0.7 * c + 0.3 * code / 15.0
        return torch.from_numpy(img[None].copy()), y


class Experiment:
    def __init__(self, epochs, batch_size, accum, lr, num_workers):
        self.epochs = epochs
        self.accum = accum
        self.loader = DataLoader(Patches(), batch_size=batch_size, shuffle=True, num_workers=num_workers)
        self.model = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.Conv2d(16, 16, 3), nn.ReLU(),
                                   nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(64, 3))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.crit = nn.CrossEntropyLoss()

    def __call__(self):
        for epoch in range(self.epochs):
            self.model.train()
            running, correct, total = 0.0, 0, 0
            self.opt.zero_grad()
            for i, (x, y) in enumerate(self.loader):
                out = self.model(x)
                loss = self.crit(out, y) / self.accum
                loss.backward()
                if (i + 1) % self.accum == 0:
                    self.opt.step()
                    self.opt.zero_grad()
                with torch.no_grad():
                    correct += (out.argmax(1) == y).sum().item()
                    total += y.numel()
                running += loss.item() * self.accum
            print(f"epoch {epoch}: batches {i + 1} loss {running / (i + 1):.4f} acc {correct / total:.3f}")
        return self.model


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--accum", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--num_workers", type=int, default=2)
    args = p.parse_args()
    torch.manual_seed(0)
    Experiment(**vars(args))()
