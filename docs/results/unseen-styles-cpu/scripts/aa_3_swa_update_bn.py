"""Stochastic Weight Averaging as in the PyTorch SWA recipe: plain SGD with cosine annealing for the first epochs,
then an AveragedModel updated every epoch under SWALR. Because the net has BatchNorm, the recipe ends with
torch.optim.swa_utils.update_bn(train_loader, swa_model), one more pass over the training loader made inside
torch itself, before the averaged model is evaluated on a held-out loader. Loaders come from get_loaders() with
the worker count written in the call."""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, Dataset

EPOCHS = 4
SWA_START = 2
BATCH = 64


class Spirals(Dataset):
    """Two-arm spirals in 2-D lifted to 256-D through random Fourier features computed per item."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        t = torch.rand(n, generator=g) * 4 * math.pi
        self.labels = torch.randint(0, 2, (n,), generator=g)
        sign = self.labels.float() * 2 - 1
        self.points = torch.stack([sign * t * torch.cos(t), sign * t * torch.sin(t)], 1) / (4 * math.pi)
        self.points += 0.03 * torch.randn(n, 2, generator=g)
        self.proj = torch.randn(2, 128, generator=torch.Generator().manual_seed(123)) * 6.0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        p = self.points[idx]
        feats = []
        for scale in (0.5, 1.0, 2.0, 4.0):           # multi-scale features, one small matmul at a time
            z = (p * scale) @ self.proj
            feats.append(torch.cat([torch.sin(z), torch.cos(z)]))
        x = torch.stack(feats).mean(0)
        for _ in range(40):
            x = x - 0.01 * torch.tanh(x)
        return x, self.labels[idx]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 384)
        self.bn1 = nn.BatchNorm1d(384)
        self.fc2 = nn.Linear(384, 384)
        self.bn2 = nn.BatchNorm1d(384)
        self.head = nn.Linear(384, 2)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.fc2(x)))
        return self.head(x)


def get_loaders():
    train_set, test_set = Spirals(3200, seed=0), Spirals(640, seed=1)
    train_loader = DataLoader(train_set, batch_size=BATCH, shuffle=True, num_workers=2)
    test_loader = DataLoader(test_set, batch_size=256, shuffle=False, num_workers=2)
    return train_loader, test_loader


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
        total += y.numel()
    return correct / total


def main():
    torch.manual_seed(0)
    train_loader, test_loader = get_loaders()
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=0.02)

    for epoch in range(EPOCHS):
        model.train()
        t0, running, count = time.time(), 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
            count += 1
        if epoch >= SWA_START:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        print(f"epoch {epoch} loss {running / count:.4f} batches {count} lr {optimizer.param_groups[0]['lr']:.4f} "
              f"{time.time() - t0:.1f}s")

    t0 = time.time()
    update_bn(train_loader, swa_model)
    print(f"update_bn pass {time.time() - t0:.1f}s")
    print(f"test acc: model {evaluate(model, test_loader):.3f}  swa {evaluate(swa_model, test_loader):.3f}")


if __name__ == "__main__":
    main()
