"""Workers set in code, no command-line flags: a small regression on random numbers."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(epochs=2):
    data = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    train()
