"""Heavy augmentation on small RGB images, in a config-dict style: RandomResizedCrop, flips and
ColorJitter on PIL images for every item, a small conv net, `cfg["workers"]` from --workers."""
import argparse
import time

import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T


class Pictures(Dataset):
    def __init__(self, n, tf):
        self.pixels = np.random.default_rng(0).integers(0, 256, (n, 72, 72, 3), np.uint8)
        self.tf = tf

    def __len__(self):
        return len(self.pixels)

    def __getitem__(self, i):
        return self.tf(Image.fromarray(self.pixels[i])), i % 10


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))


def make_model():
    return nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, 10))


def run(cfg):
    tf = T.Compose([T.RandomResizedCrop(56), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                    T.Normalize([0.5] * 3, [0.25] * 3)])
    loader = DataLoader(Pictures(cfg["samples"], tf), batch_size=cfg["bs"], shuffle=True, num_workers=cfg["workers"],
                        pin_memory=True, drop_last=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model, crit = make_model().to(dev), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for ep in range(cfg["epochs"]):
        t0 = time.perf_counter()
        for imgs, labels in loader:
            imgs, labels = imgs.to(dev, non_blocking=True), labels.to(dev, non_blocking=True)
            loss = crit(model(imgs), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        print(f"ep {ep} {time.perf_counter() - t0:.2f}s loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=12800)
    p.add_argument("--bs", type=int, default=128)
    run(vars(p.parse_args()))
