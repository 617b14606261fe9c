"""PyTorch/examples MNIST style: `train_kwargs = {'batch_size': args.batch_size}`, and only
`if use_cuda:` a `cuda_kwargs = {'num_workers': 1, 'pin_memory': True, 'shuffle': True}` dict is merged in.
On a CPU-only machine the cuda branch is skipped, so the loader runs with num_workers=0 (the DataLoader default)
and shuffle=False. `DataLoader(dataset1, **train_kwargs)`; train() loops `for batch_idx, (data, target) in
enumerate(train_loader)`; test() runs after every epoch over a second loader. StepLR scheduler.

A correct report: the loop is train()'s `for batch_idx, (data, target) in enumerate(train_loader)`; 3 epochs of
40 batches (1280 items, batch 32); the count is the DataLoader default 0 (no num_workers anywhere on the CPU path):
the edit must add `'num_workers': N` to train_kwargs (or outside the `if use_cuda:` block) - editing cuda_kwargs
would change nothing on this machine.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class Strokes(Dataset):
    def __init__(self, n, seed):
        self.labels = np.random.default_rng(seed).integers(0, 10, n)
        self.seed = seed

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = np.random.default_rng(self.seed * 100003 + i)
        y = int(self.labels[i])
        img = np.zeros((28, 28), np.float32)
        img[3 + y:25 - y // 2, 5 + y // 2:9 + y] = 1.0
        img += 0.4 * g.standard_normal((28, 28)).astype(np.float32)
        for _ in range(4):
            img = (img + np.roll(img, 1, 0) + np.roll(img, -1, 1)) / 3.0
        time.sleep(0.003)
        img = (img - 0.1307) / 0.3081
        return torch.from_numpy(img)[None], y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(4608, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout1(x)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    total, n = 0.0, 0
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        total += loss.item()
        n += 1
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
    print(f"epoch {epoch} loss {total / n:.4f} batches {n} workers {train_loader.num_workers}")


def test(model, device, test_loader):
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            correct += output.argmax(dim=1).eq(target).sum().item()
    test_loss /= len(test_loader.dataset)
    print('Test set: Average loss: {:.4f}, Accuracy: {}/{}'.format(test_loss, correct, len(test_loader.dataset)))


def main():
    parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--test-batch-size', type=int, default=256, metavar='N')
    parser.add_argument('--epochs', type=int, default=3, metavar='N')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M')
    parser.add_argument('--no-cuda', action='store_true', default=False)
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N')
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if use_cuda else "cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_cuda:
        cuda_kwargs = {'num_workers': 1, 'pin_memory': True, 'shuffle': True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs.update(cuda_kwargs)

    dataset1 = Strokes(1280, seed=1)
    dataset2 = Strokes(256, seed=2)
    train_loader = DataLoader(dataset1, **train_kwargs)
    test_loader = DataLoader(dataset2, **test_kwargs)

    model = Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()
        print(f"  ({time.time() - t0:.1f}s)")


if __name__ == '__main__':
    main()
