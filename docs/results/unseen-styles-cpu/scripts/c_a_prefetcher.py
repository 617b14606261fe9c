"""NVIDIA apex-style data_prefetcher with .next() and `while input is not None` loop."""
import argparse, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader


class SynthDataset(Dataset):
    def __init__(self, n=768, dim=64, classes=10):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randint(0, classes, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        for _ in range(20):
            x = torch.tanh(x @ torch.eye(x.numel()) * 0.99 + 0.01)
        time.sleep(0.001)
        return x, self.y[i]


class data_prefetcher():
    def __init__(self, loader):
        self.loader = iter(loader)
        self.preload()

    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = None
            self.next_target = None
            return
        self.next_input = self.next_input.float()

    def next(self):
        input = self.next_input
        target = self.next_target
        self.preload()
        return input, target


def train(loader, model, criterion, optimizer, epoch):
    model.train()
    prefetcher = data_prefetcher(loader)
    input, target = prefetcher.next()
    i = 0
    total = 0.0
    while input is not None:
        i += 1
        output = model(input)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        input, target = prefetcher.next()
    print(f"epoch {epoch}: {i} batches, mean loss {total / i:.5f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--workers", "-j", type=int, default=1)
    p.add_argument("--batch-size", "-b", type=int, default=32)
    args = p.parse_args()
    torch.manual_seed(42)
    loader = DataLoader(SynthDataset(), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, pin_memory=False)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    t0 = time.time()
    for epoch in range(args.epochs):
        train(loader, model, criterion, optimizer, epoch)
    print(f"done in {time.time() - t0:.2f}s")


if __name__ == "__main__":
    main()
