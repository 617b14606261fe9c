"""Train and validation loaders set up apart (the train one with more workers and a deeper prefetch_factor),
validation every --val-every optimizer steps inside the epoch, a OneCycle LR stepped per batch, and gradient
clipping: the usual shape of a fine-tuning script. Task: classify 32x32 textures, augmented per item."""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Textures(Dataset):
    """Six kinds of oriented stripe / checker textures; training items get a random rotation-ish shear, a
    random crop and flip, colour jitter, and a blur, done per item."""

    def __init__(self, n, train, seed):
        self.n, self.train, self.seed = n, train, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 7919 + i)
        label = i % 6
        yy, xx = torch.meshgrid(torch.arange(40.0), torch.arange(40.0), indexing="ij")
        angle = label * math.pi / 6 + (0.3 * float(torch.rand(1, generator=g)) if self.train else 0.0)
        freq = 0.4 + 0.1 * (label % 3)
        img = torch.sin(freq * (xx * math.cos(angle) + yy * math.sin(angle)))
        if label >= 3:
            img = img * torch.sin(freq * (xx * math.sin(angle) - yy * math.cos(angle)))
        img = img.expand(3, -1, -1) * torch.rand(3, 1, 1, generator=g) + 0.4 * torch.randn(3, 40, 40, generator=g)
        top, left = torch.randint(0, 9, (2,), generator=g).tolist() if self.train else (4, 4)
        img = img[:, top:top + 32, left:left + 32]
        k = torch.full((3, 1, 3, 3), 1 / 9)
        for _ in range(12):                    # denoise: repeated partial blur
            img = 0.7 * img + 0.3 * F.conv2d(img.unsqueeze(0), k, padding=1, groups=3).squeeze(0)
        if self.train and torch.rand(1, generator=g) < 0.5:
            img = img.flip(-1)
        return img.contiguous(), label


def make_model():
    def block(c_in, c_out):
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2))
    return nn.Sequential(block(3, 24), block(24, 48), block(48, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, 6))


@torch.no_grad()
def validate(model, loader):
    model.eval()
    loss_sum, correct, n = 0.0, 0, 0
    for x, y in loader:
        out = model(x)
        loss_sum += F.cross_entropy(out, y, reduction="sum").item()
        correct += (out.argmax(1) == y).sum().item()
        n += len(y)
    model.train()
    return loss_sum / n, correct / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=48)
    ap.add_argument("--train-workers", type=int, default=2)
    ap.add_argument("--val-workers", type=int, default=1)
    ap.add_argument("--prefetch", type=int, default=4)
    ap.add_argument("--val-every", type=int, default=40, help="optimizer steps between validations")
    ap.add_argument("--max-lr", type=float, default=5e-3)
    ap.add_argument("--clip", type=float, default=2.0)
    args = ap.parse_args()
    torch.manual_seed(0)

    train_dl = DataLoader(Textures(4800, train=True, seed=1), batch_size=args.batch_size, shuffle=True,
                          num_workers=args.train_workers, prefetch_factor=args.prefetch, persistent_workers=True)
    val_dl = DataLoader(Textures(480, train=False, seed=2), batch_size=240, num_workers=args.val_workers)

    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.max_lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.max_lr, epochs=args.epochs,
                                                    steps_per_epoch=len(train_dl))
    global_step = 0
    for epoch in range(args.epochs):
        t0, seen, running = time.time(), 0, 0.0
        for x, y in train_dl:
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            scheduler.step()
            global_step += 1
            running += loss.item()
            seen += 1
            if global_step % args.val_every == 0:
                val_loss, val_acc = validate(model, val_dl)
                print(f"  step {global_step:4d} train_loss {running / seen:.4f} grad_norm {grad_norm:.2f} "
                      f"lr {scheduler.get_last_lr()[0]:.2e} val_loss {val_loss:.4f} val_acc {val_acc:.3f}", flush=True)
        print(f"epoch {epoch} done: {seen} batches, train_loss {running / seen:.4f}, {time.time() - t0:.1f}s",
              flush=True)


if __name__ == "__main__":
    main()
