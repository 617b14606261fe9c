"""A trainer whose loop calls `self.compute_loss(batch)`, which runs the model and the criterion both."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 16))
        self.criterion = nn.MSELoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def compute_loss(self, batch):
        x, y = batch
        output = self.model(x)
        return self.criterion(output, y)

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for batch in loader:
                self.optimizer.zero_grad()
                loss = self.compute_loss(batch)
                loss.backward()
                self.optimizer.step()
            print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(2048, 256), torch.randn(2048, 16))
    Trainer().fit(DataLoader(data, batch_size=32, shuffle=True), epochs=2)
