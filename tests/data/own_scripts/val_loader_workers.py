"""A training loader with 1 worker and a validation loader with 2, each epoch, as most scripts have: on a 2-CPU job a
plain run gets no warning from torch, and the profiled run should not add one (unseen ad_4 gained torch's "suggested
max number of worker in current system is 1" while the kit held its turns to fewer CPUs)."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 8), torch.randn(n, 1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.001)
        return self.x[i], self.y[i]


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(Slow(512), batch_size=16, shuffle=True, num_workers=1)
    val_loader = DataLoader(Slow(128), batch_size=32, num_workers=2)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(5):
        for x, y in train_loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_loader)
        print(f"epoch {epoch}: loss {loss.item():.6f}, val {val:.6f}", flush=True)


if __name__ == "__main__":
    main()
