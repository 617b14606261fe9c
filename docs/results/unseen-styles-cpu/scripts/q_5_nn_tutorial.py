"""The layout of PyTorch's "What is torch.nn really?" tutorial: get_data() -> train_dl, valid_dl over TensorDatasets,
a WrappedDataLoader that runs preprocess() on every batch in the main process, loss_batch() doing forward, backward
and step, and fit() whose validation is a list comprehension of loss_batch over valid_dl."""
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

bs = 64
lr = 0.1
epochs = 8
dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def make_digits(n, seed):
    g = torch.Generator().manual_seed(seed)
    templates = torch.rand(10, 784, generator=torch.Generator().manual_seed(123)) > 0.7
    y = torch.randint(0, 10, (n,), generator=g)
    x = templates[y].float() * 0.25 + torch.rand(n, 784, generator=g)
    return x, y


def get_data(train_ds, valid_ds, bs):
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True),
        DataLoader(valid_ds, batch_size=bs * 2),
    )


BLUR = torch.tensor([[1., 2., 1.], [2., 4., 2.], [1., 2., 1.]]).div(16).view(1, 1, 3, 3)


def preprocess(x, y):
    x = x.view(-1, 1, 28, 28)
    for _ in range(3):  # a light blur and contrast jitter on the batch, in the main process
        x = F.conv2d(x, BLUR, padding=1)
    x = x * (0.8 + 0.4 * torch.rand(x.shape[0], 1, 1, 1)) + 0.05 * torch.randn_like(x)
    x = (x - x.mean(dim=(2, 3), keepdim=True)) / (x.std(dim=(2, 3), keepdim=True) + 1e-5)
    return x.to(dev), y.to(dev)


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield (self.func(*b))


class Mnist_CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1)

    def forward(self, xb):
        xb = F.relu(self.conv1(xb))
        xb = F.relu(self.conv2(xb))
        xb = F.relu(self.conv3(xb))
        xb = F.avg_pool2d(xb, 4)
        return xb.view(-1, xb.size(1))


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        t0 = time.time()
        model.train()
        train_losses = []
        for xb, yb in train_dl:
            train_losses.append(loss_batch(model, loss_func, xb, yb, opt)[0])
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(f"epoch {epoch} loss {np.mean(train_losses):.4f} batches {len(train_losses)} val_loss {val_loss:.4f} "
              f"time {time.time() - t0:.1f}s", flush=True)


def main():
    torch.manual_seed(0)
    x_train, y_train = make_digits(40000, seed=1)
    x_valid, y_valid = make_digits(4000, seed=2)
    train_ds = TensorDataset(x_train, y_train)
    valid_ds = TensorDataset(x_valid, y_valid)
    train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
    train_dl = WrappedDataLoader(train_dl, preprocess)
    valid_dl = WrappedDataLoader(valid_dl, preprocess)
    model = Mnist_CNN().to(dev)
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    start = time.time()
    fit(epochs, model, F.cross_entropy, opt, train_dl, valid_dl)
    print(f"total {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
