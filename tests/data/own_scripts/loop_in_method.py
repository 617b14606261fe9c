"""The loop lives in a Trainer class's method."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, workers=1):
        data = TensorDataset(torch.randn(160, 4), torch.randn(160, 2))
        self.train_loader = DataLoader(data, batch_size=16, num_workers=workers, persistent_workers=workers > 0)
        self.model = nn.Linear(4, 2)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)

    def train_epoch(self):
        for batch, target in self.train_loader:
            self.optimizer.zero_grad()
            nn.functional.mse_loss(self.model(batch), target).backward()
            self.optimizer.step()


if __name__ == "__main__":
    Trainer().train_epoch()
