"""Everything preloaded as tensors on the device (TensorDataset, num_workers=0) and a compute-heavy model: the
compute-bound case, where the loader only slices tensors already in memory."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ResidualMLP(nn.Module):
    def __init__(self, d_in=256, width=1024, depth=4, classes=20):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(),
                                                   nn.Linear(width, width)) for _ in range(depth)])
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def make_data(n, d_in, classes, device, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, d_in, generator=g) * 0.12
    y = torch.randint(0, classes, (n,), generator=g)
    x = centers[y] + torch.randn(n, d_in, generator=g)
    return x.to(device), y.to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--n-train", type=int, default=8192)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x, y = make_data(args.n_train, 256, 20, device, args.seed)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, num_workers=0)
    model = ResidualMLP(width=args.width, depth=args.depth).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        running_loss, correct, total, n_batches = 0.0, 0, 0, 0
        for inputs, targets in train_loader:
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            correct += (outputs.argmax(1) == targets).sum().item()
            total += targets.size(0)
            n_batches += 1
        print(f"epoch {epoch} loss {running_loss / n_batches:.4f} batches {n_batches} "
              f"acc {100.0 * correct / total:.1f}%", flush=True)


if __name__ == "__main__":
    main()
