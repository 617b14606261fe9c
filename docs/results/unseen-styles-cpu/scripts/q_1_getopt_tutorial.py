#!/usr/bin/env python
"""CIFAR-tutorial-style training (enumerate(trainloader, 0), running_loss every 20 mini-batches) with an old-school
getopt command line, as older research code has: -w/--workers, -e/--epochs, -b/--batch, --lr."""
import getopt
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset


def usage():
    print("usage: q_1_getopt_tutorial.py [-w workers] [-e epochs] [-b batch] [--lr=LR]")


class NoisyShapes(Dataset):
    """32x32 RGB class prototypes plus per-item noise; a little per-item CPU work, as decoding would be."""

    def __init__(self, n=6000, seed=0):
        g = np.random.default_rng(seed)
        self.labels = g.integers(0, 10, n)
        self.base = g.standard_normal((10, 3, 32, 32)).astype(np.float32)
        self.seeds = g.integers(0, 2**31, n)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        r = np.random.default_rng(self.seeds[i])  # the same item whichever process builds it
        y = int(self.labels[i])
        x = self.base[y] + 2.5 * r.standard_normal((3, 32, 32)).astype(np.float32)
        for _ in range(12):
            x = np.clip(x + 0.01 * np.roll(x, 1, axis=2), -3, 3)
        return torch.from_numpy(x), y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = self.drop(F.relu(self.fc1(x)))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def train(net, trainloader, epochs, lr):
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    for epoch in range(epochs):
        running_loss, epoch_loss, n, t0 = 0.0, 0.0, 0, time.time()
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            epoch_loss += loss.item()
            n += 1
            if i % 20 == 19:
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 20:.3f}")
                running_loss = 0.0
        print(f"epoch {epoch} loss {epoch_loss / n:.4f} batches {n} time {time.time() - t0:.1f}s", flush=True)
    print("Finished Training")


def main(argv):
    workers, epochs, batch, lr = 0, 8, 32, 0.01
    try:
        opts, _ = getopt.getopt(argv, "hw:e:b:", ["help", "workers=", "epochs=", "batch=", "lr="])
    except getopt.GetoptError as err:
        print(err)
        usage()
        return 2
    for o, a in opts:
        if o in ("-h", "--help"):
            usage()
            return 0
        elif o in ("-w", "--workers"):
            workers = int(a)
        elif o in ("-e", "--epochs"):
            epochs = int(a)
        elif o in ("-b", "--batch"):
            batch = int(a)
        elif o == "--lr":
            lr = float(a)
    torch.manual_seed(0)
    trainset = NoisyShapes()
    trainloader = DataLoader(trainset, batch_size=batch, shuffle=True, num_workers=workers)
    net = Net()
    t0 = time.time()
    train(net, trainloader, epochs, lr)
    print(f"workers {workers} total {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
