"""A CPU-heavy loader and no worker flag: each item is 'decoded' (blurred and normalised) on the CPU.

Runs on a GPU when there is one. The DataLoader's workers are left at torch's default (0).
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class BlurredNoise(Dataset):
    def __init__(self, size, passes):
        self.size, self.passes = size, passes
        self.kernel = torch.ones(1, 1, 5, 5) / 25

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        image = torch.rand(1, 1, 64, 64, generator=generator)
        for _ in range(self.passes):  # the per-item CPU work a real decoder and augmentation would do
            image = nn.functional.conv2d(image, self.kernel, padding=2)
        return (image[0] - image.mean()) / (image.std() + 1e-6), index % 10


def train(loader, device):
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    for images, labels in loader:
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=640, help="items in one epoch")
    parser.add_argument("--passes", type=int, default=4, help="blur passes per item: the loader's CPU cost")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(BlurredNoise(args.samples, args.passes), batch_size=32, shuffle=True,
                        pin_memory=device.type == "cuda")
    print(f"final loss {train(loader, device):.3f}")
