"""DataLoader factories kept in a dict of functools.partial objects, one per split: the training line calls
`FACTORIES["train"](...)`, and its count is a keyword of the partial."""
import functools

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

FACTORIES = {
    "train": functools.partial(DataLoader, batch_size=8, shuffle=True, num_workers=0),
    "eval": functools.partial(DataLoader, batch_size=32, shuffle=False, num_workers=0),
}


def run(epochs: int = 2) -> None:
    loader = FACTORIES["train"](TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))))
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
    run()
