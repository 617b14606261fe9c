"""A folder of small JPEG files read with torchvision's ImageFolder, one file per sample, a ResNet-18;
the folder is written first when missing (outside the training loop). Workers from -j."""
import argparse
import os
import time

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision import transforms


def make_folder(root, n):
    if os.path.isdir(root) and sum(len(f) for _, _, f in os.walk(root)) >= n:
        return
    rng = np.random.default_rng(0)
    for i in range(n):
        d = os.path.join(root, f"c{i % 10}")
        os.makedirs(d, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (48, 48, 3), np.uint8)).save(os.path.join(d, f"{i}.jpg"), quality=90)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--root", default="/tmp/small-files-jpeg")
    ap.add_argument("--files", type=int, default=8000)
    args = ap.parse_args()
    make_folder(args.root, args.files)
    tf = transforms.Compose([transforms.RandomCrop(40), transforms.ToTensor()])
    data = torchvision.datasets.ImageFolder(args.root, tf)
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, num_workers=args.workers, pin_memory=True)
    net = torchvision.models.resnet18(num_classes=10).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        start = time.time()
        for x, y in loader:
            out = net(x.cuda(non_blocking=True))
            loss = torch.nn.functional.cross_entropy(out, y.cuda(non_blocking=True))
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: {time.time() - start:.2f}s", flush=True)


if __name__ == "__main__":
    main()
