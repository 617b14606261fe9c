"""K-fold cross-validation, as in many Kaggle notebooks and tabular/medical-imaging repos: the dataset is split
into 3 folds (sklearn-style KFold written out by hand); for each fold a fresh model and optimiser are built, and new
train/val DataLoaders over torch.utils.data.Subset, trained for 2 epochs and scored on the held-out fold."""
import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Subset


class NoisyPatches(Dataset):
    """16x16 patches whose class is the orientation of a stripe; each item is built and blurred on the fly."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 7919 + i)
        label = int(torch.randint(0, 3, (1,), generator=g))
        img = 0.7 * torch.randn(1, 16, 16, generator=g)
        if label == 0:
            img[:, 6:10, :] += 1.0
        elif label == 1:
            img[:, :, 6:10] += 1.0
        else:
            img += torch.eye(16).unsqueeze(0)
        for _ in range(60):  # repeated blur: the loader's CPU work
            img = 0.6 * img + 0.1 * (img.roll(1, 1) + img.roll(-1, 1) + img.roll(1, 2) + img.roll(-1, 2))
        return img, label


def kfold_indices(n, k, seed):
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    folds = [perm[f::k] for f in range(k)]
    for f in range(k):
        val = folds[f]
        train = [i for j in range(k) if j != f for i in folds[j]]
        yield f, train, val


def make_model():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                         nn.Flatten(), nn.Linear(128, 3))


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    total, batches = 0.0, 0
    for images, targets in loader:
        loss = criterion(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    return total / max(batches, 1), batches


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = seen = 0
    for images, targets in loader:
        correct += (model(images).argmax(1) == targets).sum().item()
        seen += len(targets)
    return correct / max(seen, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2, help="epochs per fold")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--n", type=int, default=1728)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    dataset = NoisyPatches(args.n)
    scores = []
    for fold, train_idx, val_idx in kfold_indices(len(dataset), args.folds, seed=0):
        train_loader = DataLoader(Subset(dataset, train_idx), batch_size=args.batch_size, shuffle=True,
                                  num_workers=args.workers, drop_last=True)
        val_loader = DataLoader(Subset(dataset, val_idx), batch_size=64, shuffle=False,
                                num_workers=args.workers)
        model = make_model()
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        criterion = nn.CrossEntropyLoss()
        for epoch in range(args.epochs):
            t0 = time.perf_counter()
            loss, batches = train_one_epoch(model, train_loader, optimizer, criterion)
            print(f"fold {fold} epoch {epoch} loss {loss:.4f} batches {batches} "
                  f"({time.perf_counter() - t0:.1f}s)", flush=True)
        acc = evaluate(model, val_loader)
        scores.append(acc)
        print(f"fold {fold} val acc {acc:.3f}", flush=True)
    print(f"cv acc {sum(scores) / len(scores):.3f} over {len(scores)} folds")


if __name__ == "__main__":
    main()
