"""pytorch/examples' mnist_hogwild layout: the function each process runs, and its loop, in a module of their own."""
import torch
from torch import nn
from torch.utils.data import DataLoader


def train(rank, model, dataset):
    torch.manual_seed(rank)
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train_epoch(model, loader, optimizer)


def train_epoch(model, loader, optimizer):
    for features, target in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(features), target).backward()
        optimizer.step()
