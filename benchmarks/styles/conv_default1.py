"""A conv net on MNIST-shaped images in the pytorch/examples style: PIL images through torchvision's
ToTensor and Normalize, and loader kwargs with the examples' 1 worker on CUDA. Synthetic, no download."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import Dataset
from torchvision import transforms


class FakeMNIST(Dataset):
    def __init__(self, n, transform):
        rng = np.random.default_rng(0)
        self.data, self.targets = rng.integers(0, 256, (n, 28, 28), np.uint8), rng.integers(0, 10, n)
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        return self.transform(Image.fromarray(self.data[index], mode="L")), int(self.targets[index])


class Net(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, 3, 1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(288 * width, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0 and args.verbose:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}] Loss: {loss.item():.6f}")


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example (synthetic)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--width", type=int, default=32, help="channels of the first conv layer")
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_kwargs = {"batch_size": args.batch_size}
    if device.type == "cuda":
        train_kwargs.update({"num_workers": 1, "pin_memory": True, "shuffle": True})
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_loader = torch.utils.data.DataLoader(FakeMNIST(args.samples, transform), **train_kwargs)
    model = Net(args.width).to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        t = time.perf_counter()
        train(args, model, device, train_loader, optimizer, epoch)
        print(f"epoch {epoch} {time.perf_counter() - t:.2f}s", flush=True)


if __name__ == "__main__":
    main()
