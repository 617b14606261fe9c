"""torchvision ImageFolder over PNGs the script creates in a temp dir on first run."""
import argparse, os, tempfile, time
import numpy as np
import torch, torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

DATA_DIR = os.path.join(tempfile.gettempdir(), "unseen2_imagefolder")


def make_dataset(root, classes=4, per_class=120, size=40):
    if os.path.isdir(root) and len(os.listdir(root)) == classes:
        return
    rng = np.random.default_rng(0)
    for c in range(classes):
        d = os.path.join(root, f"class_{c}")
        os.makedirs(d, exist_ok=True)
        for k in range(per_class):
            arr = (rng.random((size, size, 3)) * 80 + c * 40).astype(np.uint8)
            Image.fromarray(arr).save(os.path.join(d, f"{k:04d}.png"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=DATA_DIR)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args()
    make_dataset(args.data)
    torch.manual_seed(0)
    tf = transforms.Compose([transforms.Resize(36), transforms.CenterCrop(32), transforms.ToTensor(),
                             transforms.Normalize([0.5] * 3, [0.25] * 3)])
    train_set = datasets.ImageFolder(args.data, transform=tf)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 8 * 8, len(train_set.classes)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        t = time.time()
        correct = seen = 0
        loss_sum = 0.0
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output, target)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(target)
            correct += (output.argmax(1) == target).sum().item()
            seen += len(target)
        print(f"Train Epoch: {epoch} batches {batch_idx + 1} loss {loss_sum / seen:.5f} acc {correct / seen:.3f} {time.time()-t:.2f}s")


if __name__ == "__main__":
    main()
