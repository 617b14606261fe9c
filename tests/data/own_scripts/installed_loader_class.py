"""The training loader is an installed library's loader class (webdataset's `WebLoader` in its examples), which
builds torch's DataLoader inside: the edit names the call the script's line makes, not `DataLoader`."""
import torch
from torch import nn
from torch.utils.data import Dataset

import tinywds as wds


class Squares(Dataset):
    def __len__(self):
        return 192

    def __getitem__(self, i):
        x = torch.full((6,), float(i % 7))
        return x, x.pow(2).sum(0, keepdim=True)


def train(loader, epochs):
    model = nn.Linear(6, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    train(wds.WebLoader(Squares(), batch_size=16, shuffle=True, num_workers=1), 4)
