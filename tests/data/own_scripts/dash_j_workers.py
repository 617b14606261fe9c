"""ImageNet-style flags: -j/--workers sets the loader's workers."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser(description="tiny classifier on random images")
    parser.add_argument("-j", "--workers", type=int, default=0, help="data loading workers")
    parser.add_argument("-b", "--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    images = TensorDataset(torch.randn(args.steps * args.batch_size, 3, 8, 8),
                           torch.randint(0, 4, (args.steps * args.batch_size,)))
    train_loader = DataLoader(images, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Flatten(), nn.Linear(192, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images_batch, target in train_loader:
        loss = nn.functional.cross_entropy(model(images_batch), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
