"""A linear probe: --workers feeds the feature-extraction loader; the probe's loader, the training loop's, sets none."""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1, help="workers for the image loader (feature extraction)")
    args = parser.parse_args()
    images = DataLoader(TensorDataset(torch.randn(128, 8)), batch_size=32, num_workers=args.workers)
    with torch.no_grad():
        features = torch.cat([x @ torch.ones(8, 3) for (x,) in images])
    probe = DataLoader(TensorDataset(features, torch.randn(128, 1)), batch_size=16, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in probe:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
