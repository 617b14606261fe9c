"""Every setting in a JSON file (--config, default json_workers.json beside this script)."""
import argparse
import json
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(cfg):
    data = TensorDataset(torch.randn(256, 3), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=cfg["loader"]["batch_size"], shuffle=True,
                        num_workers=cfg["loader"]["num_workers"])
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "json_workers.json"))
    with open(parser.parse_args().config) as f:
        train(json.load(f))
