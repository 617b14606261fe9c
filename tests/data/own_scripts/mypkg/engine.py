"""The training loop, in the user's own package (not in the script)."""
from torch import nn


def train_one_epoch(model, loader, optimizer):
    for features, target in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(features), target).backward()
        optimizer.step()
