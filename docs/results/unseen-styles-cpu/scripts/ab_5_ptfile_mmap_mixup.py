"""A dataset prepared once into a single .pt file (torch.save of a dict of uint8 tensors) and opened with
torch.load(..., mmap=True, weights_only=True), so the pages are read on demand in every worker; random-crop and
flip augmentation per item; mixup in the training loop (lam from np.random.beta, a permuted batch, the loss mixed
the same way). The run lives inside `with tempfile.TemporaryDirectory() as tmp:`."""
import argparse
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def prepare(path, n=6000, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    base = torch.rand(10, 3, 8, 8, generator=g)
    imgs = F.interpolate(base[labels], size=36, mode="bilinear", align_corners=False)
    imgs = (imgs + 0.25 * torch.rand(imgs.shape, generator=g)).clamp(0, 1)
    torch.save({"images": (imgs * 255).to(torch.uint8), "labels": labels}, path)


class PtFileDataset(Dataset):
    def __init__(self, path, train=True):
        blob = torch.load(path, mmap=True, weights_only=True)
        self.images, self.labels, self.train = blob["images"], blob["labels"], train

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = self.images[i].float().div_(255)
        if self.train:
            top, left = np.random.randint(0, 5, size=2)
            img = img[:, top:top + 32, left:left + 32]
            if np.random.rand() < 0.5:
                img = img.flip(-1)
            img = img + 0.02 * torch.randn_like(img)
        else:
            img = img[:, 2:34, 2:34]
        img = (img - 0.5) / 0.25
        return img.contiguous(), self.labels[i]


def conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(conv_bn(3, 32), nn.MaxPool2d(2), conv_bn(32, 64), nn.MaxPool2d(2),
                                      conv_bn(64, 64), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def mixup_data(x, y, alpha):
    lam = np.random.beta(alpha, alpha) if alpha > 0 else 1.0
    index = torch.randperm(x.size(0))
    return lam * x + (1 - lam) * x[index], y, y[index], lam


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", default=2, type=int)
    parser.add_argument("--batch-size", default=128, type=int)
    parser.add_argument("--alpha", default=0.4, type=float, help="mixup alpha")
    parser.add_argument("--workers", default=1, type=int)
    args = parser.parse_args()
    np.random.seed(0)
    torch.manual_seed(0)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.pt")
        prepare(path)
        trainloader = DataLoader(PtFileDataset(path), batch_size=args.batch_size, shuffle=True,
                                 num_workers=args.workers, persistent_workers=args.workers > 0)
        net = Net()
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        for epoch in range(args.epochs):
            net.train()
            train_loss, correct, total = 0.0, 0.0, 0
            for batch_idx, (inputs, targets) in enumerate(trainloader):
                inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, args.alpha)
                outputs = net(inputs)
                loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                train_loss += loss.item()
                _, predicted = outputs.max(1)
                total += targets.size(0)
                correct += (lam * predicted.eq(targets_a).sum().item() + (1 - lam) * predicted.eq(targets_b).sum().item())
            print(f"Epoch {epoch}: {batch_idx + 1} batches | Loss: {train_loss / (batch_idx + 1):.3f} | "
                  f"Acc: {100. * correct / total:.2f}%", flush=True)
        net.eval()
        test = PtFileDataset(path, train=False)
        with torch.no_grad():
            x, y = zip(*(test[i] for i in range(0, len(test), 6)))
            acc = (net(torch.stack(x)).argmax(1) == torch.stack(y)).float().mean().item()
        print(f"held-in eval acc {acc:.3f}")


if __name__ == "__main__":
    main()
