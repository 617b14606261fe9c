"""A CLI with subcommands, as in many research repos' single entry point:

    python h_4_subcommands.py fit --num-workers 1 --epochs 3 --save /tmp/h4_model.pt
    python h_4_subcommands.py evaluate --weights /tmp/h4_model.pt

`main()` returns an exit code; the module ends with `sys.exit(main())`."""
import argparse
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class SyntheticDigits(Dataset):
    """8x8 "digits": a class template plus noise, blurred in __getitem__ (the per-item CPU cost)."""

    def __init__(self, n, split="train", seed=0):
        g = torch.Generator().manual_seed(seed)
        self.templates = torch.rand(10, 1, 16, 16, generator=g)
        self.n, self.offset = n, 0 if split == "train" else 10_000_000

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.offset + index)
        label = index % 10
        img = self.templates[label] + 0.4 * torch.randn(1, 16, 16, generator=g)
        kernel = torch.full((1, 1, 3, 3), 1 / 9)
        for _ in range(50):
            img = torch.nn.functional.conv2d(img.unsqueeze(0), kernel, padding=1).squeeze(0) * 0.05 + img * 0.95
        return img, label


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1))


def add_common(p):
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)


def cmd_fit(args):
    torch.manual_seed(args.seed)
    train_set = SyntheticDigits(args.train_size, "train")
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, drop_last=True)
    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0, seen, running, n_batches = time.time(), 0, 0.0, 0
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            running += loss.item() * images.size(0)
            seen += images.size(0)
            n_batches += 1
        print(f"[fit] epoch {epoch}/{args.epochs} loss {running / seen:.4f} batches {n_batches} "
              f"{time.time() - t0:.1f}s", flush=True)
    if args.save:
        torch.save(model.state_dict(), args.save)
        print(f"[fit] saved {args.save}")
    return 0


def cmd_evaluate(args):
    model = SmallCNN()
    try:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    except FileNotFoundError:
        print(f"error: no weights at {args.weights}; run `fit --save {args.weights}` first", file=sys.stderr)
        return 1
    model.eval()
    loader = DataLoader(SyntheticDigits(512, "val"), batch_size=args.batch_size, num_workers=args.num_workers)
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += labels.numel()
    print(f"[evaluate] accuracy {correct / total:.3f} on {total} images")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="h_4_subcommands", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit", help="train a model")
    add_common(fit)
    fit.add_argument("--epochs", type=int, default=3)
    fit.add_argument("--lr", type=float, default=1e-2)
    fit.add_argument("--train-size", type=int, default=2048)
    fit.add_argument("--save", default="")
    fit.set_defaults(func=cmd_fit)
    ev = sub.add_parser("evaluate", help="accuracy of saved weights")
    add_common(ev)
    ev.add_argument("--weights", required=True)
    ev.set_defaults(func=cmd_evaluate)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
