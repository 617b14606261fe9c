"""Train function is a @staticmethod of a class; model uses torch.utils.checkpoint on its blocks; Dataset
returns a dict with a string field ('name') and an int label, collated by the default collate."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, Dataset


class Molecules(Dataset):
    """Fake 'molecules': random point sets -> pairwise distance histogram features."""

    def __init__(self, n=1800):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        label = i % 4
        pts = rng.normal(0, 1 + 0.3 * label, (90, 3))
        d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
        hist = np.stack([np.histogram(d[j], bins=16, range=(0, 8))[0] for j in range(0, 90, 3)]).astype(np.float32)
        return {"name": f"mol_{i:05d}", "feat": torch.from_numpy(hist.ravel() / 90.0), "label": label}


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.l1, self.l2, self.norm = nn.Linear(d, d * 2), nn.Linear(d * 2, d), nn.LayerNorm(d)

    def forward(self, x):
        return x + self.l2(F.gelu(self.l1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, d_in=480, d=192, depth=4):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.out = nn.Linear(d, 4)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = checkpoint(b, h, use_reentrant=False)
        return self.out(h)


class Trainer:
    @staticmethod
    def train(model, loader, epochs, lr=2e-3):
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        for epoch in range(epochs):
            total, count, names = 0.0, 0, set()
            for batch in loader:
                logits = model(batch["feat"])
                loss = F.cross_entropy(logits, batch["label"])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item()
                count += 1
                names.update(batch["name"])
            print(f"[epoch {epoch + 1}/{epochs}] loss={total / count:.4f} batches={count} unique={len(names)}")


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(Molecules(), batch_size=48, shuffle=True, num_workers=2, pin_memory=False)
    Trainer.train(Net(), loader, epochs=3)
