"""No argparse at all: constants at the top, pin_memory set, workers left at the default."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH = 16
STEPS = 12


def run():
    data = TensorDataset(torch.randn(BATCH * STEPS, 10), torch.randint(0, 2, (BATCH * STEPS,)))
    loader = DataLoader(data, batch_size=BATCH, pin_memory=True)
    net = nn.Linear(10, 2)
    opt = torch.optim.Adam(net.parameters())
    for inputs, labels in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(net(inputs), labels).backward()
        opt.step()


run()
