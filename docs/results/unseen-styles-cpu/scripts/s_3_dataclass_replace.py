"""A @dataclass Trainer holding model, data and loop, with a `train()` method; `workers: int = 0` is a field whose
default `main()` overrides through `dataclasses.replace(base, workers=1, ...)`. Correct edit: the replace call's
`workers=1` (the default line is overridden)."""
import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, Dataset


class Jittered(Dataset):
    def __init__(self, n=600):
        g = np.random.default_rng(2)
        self.x = g.random((n, 1, 16, 16), dtype=np.float32)
        self.y = g.integers(0, 4, size=n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        img = self.x[i]
        for _ in range(40):
            img = 0.8 * img + 0.2 * np.roll(img, 1, axis=-1)
        time.sleep(0.0005)
        return torch.from_numpy(img.copy()), torch.tensor(self.y[i])


@dataclass
class Trainer:
    epochs: int = 3
    batch_size: int = 24
    lr: float = 1e-3
    workers: int = 0
    history: list = field(default_factory=list)

    def __post_init__(self):
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                   nn.Flatten(), nn.Linear(32, 4))
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr)

    def loader(self):
        return DataLoader(Jittered(), batch_size=self.batch_size, shuffle=True, num_workers=self.workers)

    def train(self):
        dl = self.loader()
        for ep in range(self.epochs):
            running, n = 0.0, 0
            for x, y in dl:
                out = self.model(x)
                loss = nn.functional.cross_entropy(out, y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                running += loss.item()
                n += 1
            self.history.append(running / n)
            print(f"[{ep + 1}/{self.epochs}] workers={self.workers} batches={n} loss={running / n:.4f}")
        return self.history


def main():
    base = Trainer()
    trainer = dataclasses.replace(base, workers=1, lr=2e-3)
    trainer.train()


if __name__ == "__main__":
    main()
