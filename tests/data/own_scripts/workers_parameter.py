"""The count is a parameter of the training function, with a default its caller never overrides."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(epochs: int = 2, batch_size: int = 8, num_workers: int = 0) -> None:
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=batch_size,
                        shuffle=True, num_workers=num_workers)
    net = nn.Linear(8, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done, workers {loader.num_workers}", flush=True)


if __name__ == "__main__":
    train()
