"""An MNIST classifier in the style of the classic PyTorch example (written for this corpus)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3)
        self.fc = nn.Linear(16 * 26 * 26, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(torch.flatten(F.relu(self.conv(x)), 1)), dim=1)


def main():
    parser = argparse.ArgumentParser(description="MNIST")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    train_kwargs = {"batch_size": args.batch_size}
    if use_cuda:
        cuda_kwargs = {"num_workers": 1,
                       "pin_memory": True,
                       "shuffle": True}
        train_kwargs.update(cuda_kwargs)

    tfm = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_set = datasets.MNIST("data", train=True, download=False, transform=tfm)
    loader = DataLoader(train_set, **train_kwargs)
    model = Net().to(device)
    opt = torch.optim.Adadelta(model.parameters())
    for _ in range(args.epochs):
        for x, y in loader:
            opt.zero_grad()
            F.nll_loss(model(x.to(device)), y.to(device)).backward()
            opt.step()


if __name__ == "__main__":
    main()
