"""An ignite-style engine: the loop walks `data` and calls a step closure; no loader name, no backward in its body."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Engine:
    def __init__(self, process_function):
        self.process_function = process_function

    def run(self, data, max_epochs):
        for _ in range(max_epochs):
            for batch in data:
                self.process_function(self, batch)


def main():
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def update(engine, batch):
        x, y = batch
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()

    loader = DataLoader(TensorDataset(torch.randn(512, 3), torch.randn(512, 1)), batch_size=8, shuffle=True)
    Engine(update).run(loader, max_epochs=2)


if __name__ == "__main__":
    main()
