"""PyTorch's profiler recipe: `from torch.profiler import profile` rebinds the name auto-profiling decorates with."""
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, TensorDataset


def train(epochs=3):
    data = TensorDataset(torch.randn(512, 8), torch.randn(512, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=1)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=1, active=2, repeat=1)) as prof:
        for _ in range(epochs):
            for x, y in loader:
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                prof.step()
    print("trained")


if __name__ == "__main__":
    train()
