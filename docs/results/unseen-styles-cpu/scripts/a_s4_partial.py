"""DataLoader via functools.partial, with gradient accumulation."""
import functools, argparse, time
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader
import torchvision.transforms as T
from PIL import Image


class RandomPILDataset(Dataset):
    def __init__(self, n=2560, seed=1):
        rng = np.random.default_rng(seed)
        self.data = rng.integers(0, 256, (n, 48, 48), dtype=np.uint8)
        self.targets = rng.integers(0, 5, n).tolist()
        self.transform = T.Compose([
            T.RandomResizedCrop(28, scale=(0.6, 1.0)),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize((0.5,), (0.5,)),
        ])

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img = Image.fromarray(self.data[index], mode="L")
        return self.transform(img), self.targets[index]


def build_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 5))


def train(args):
    make_loader = functools.partial(DataLoader, batch_size=64, num_workers=1)
    train_loader = make_loader(RandomPILDataset(), shuffle=True)
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    accum = args.accum_steps

    for epoch in range(args.epochs):
        model.train()
        t = time.time()
        optimizer.zero_grad()
        batches = updates = 0
        for i, (images, targets) in enumerate(train_loader):
            loss = criterion(model(images), targets) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
                updates += 1
            batches += 1
        print(f"Epoch {epoch + 1}/{args.epochs}: {batches} batches, {updates} optimizer steps, {time.time() - t:.2f}s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--accum-steps", type=int, default=4)
    train(ap.parse_args())
