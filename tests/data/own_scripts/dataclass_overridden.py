"""A dataclass default that the call building the config overrides, as a Hugging Face-style TrainingArguments is
built in main(): the loader reads args.num_workers, and the default says 0 while the call passes 0 too."""
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class Config:
    batch_size: int = 16
    num_workers: int = 0
    lr: float = 0.01


def train(cfg: Config):
    data = TensorDataset(torch.randn(256, 3), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.num_workers)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    train(Config(batch_size=16, num_workers=0, lr=0.01))
