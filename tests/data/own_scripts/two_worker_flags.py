"""Two worker flags, the validation loader's declared first: --train-workers is the one the training loop's uses."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--val-workers", type=int, default=0)
    parser.add_argument("--train-workers", type=int, default=0)
    args = parser.parse_args()
    train_loader = DataLoader(TensorDataset(torch.randn(256, 3), torch.randn(256, 1)), batch_size=16, shuffle=True,
                              num_workers=args.train_workers)
    val_loader = DataLoader(TensorDataset(torch.randn(64, 3), torch.randn(64, 1)), batch_size=32,
                            num_workers=args.val_workers)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        print(f"val loss {sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_loader):.3f}")


if __name__ == "__main__":
    main()
