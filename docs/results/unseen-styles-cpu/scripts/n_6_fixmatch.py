"""FixMatch habit (kekmodel/FixMatch-pytorch): `for batch_idx in range(args.eval_step)` steps per "epoch", a labeled and a larger unlabeled loader (mu x batch size, weak and strong views per item) each read with `next()` inside try/except StopIteration that re-creates its iterator, so the loaders' own epochs end at other steps than the script's epochs."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler


def render(rng, label):
    """28x28 bars-and-dots: a class-specific arrangement of bars, drawn and blurred in numpy."""
    img = np.zeros((28, 28), np.float32)
    for k in range(label % 5 + 1):
        r = 3 + 5 * k + int(rng.integers(-1, 2))
        img[r:r + 2, 4:24] = 1.0 if label < 5 else 0.5
    img[int(rng.integers(0, 28)), int(rng.integers(0, 28))] = 1.0
    return img


def augment(rng, img, strong):
    img = np.roll(img, (int(rng.integers(-2, 3)), int(rng.integers(-2, 3))), axis=(0, 1))
    if rng.random() < 0.5:
        img = img[:, ::-1]
    if strong:
        img = img + rng.normal(0, 0.4, img.shape).astype(np.float32)
        y0, x0 = rng.integers(0, 20, size=2)
        img[y0:y0 + 8, x0:x0 + 8] = 0.0  # cutout
    for _ in range(6):
        img = 0.4 * img + 0.15 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
    return torch.from_numpy(np.ascontiguousarray(img))[None]


class LabeledSet(Dataset):
    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng((self.seed, i))
        label = int(rng.integers(10))
        return augment(rng, render(rng, label), strong=False), label


class UnlabeledSet(Dataset):
    """Returns (weak view, strong view), as TransformFixMatch does."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng((self.seed, i))
        img = render(rng, int(rng.integers(10)))
        return (augment(rng, img, strong=False), augment(rng, img, strong=True)), -1


class WideishNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(32 * 7 * 7, num_classes)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1))


def interleave(x, size):
    s = list(x.shape)
    return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def de_interleave(x, size):
    s = list(x.shape)
    return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def train(args, labeled_trainloader, unlabeled_trainloader, model, optimizer):
    labeled_iter = iter(labeled_trainloader)
    unlabeled_iter = iter(unlabeled_trainloader)
    model.train()
    for epoch in range(args.epochs):
        t0 = time.time()
        losses, losses_x, losses_u, mask_probs = [], [], [], []
        for batch_idx in range(args.eval_step):
            try:
                inputs_x, targets_x = next(labeled_iter)
            except StopIteration:
                labeled_iter = iter(labeled_trainloader)
                inputs_x, targets_x = next(labeled_iter)
            try:
                (inputs_u_w, inputs_u_s), _ = next(unlabeled_iter)
            except StopIteration:
                unlabeled_iter = iter(unlabeled_trainloader)
                (inputs_u_w, inputs_u_s), _ = next(unlabeled_iter)

            batch_size = inputs_x.shape[0]
            inputs = interleave(torch.cat((inputs_x, inputs_u_w, inputs_u_s)), 2 * args.mu + 1)
            logits = de_interleave(model(inputs), 2 * args.mu + 1)
            logits_x = logits[:batch_size]
            logits_u_w, logits_u_s = logits[batch_size:].chunk(2)
            Lx = F.cross_entropy(logits_x, targets_x, reduction="mean")
            pseudo_label = torch.softmax(logits_u_w.detach() / args.T, dim=-1)
            max_probs, targets_u = torch.max(pseudo_label, dim=-1)
            mask = max_probs.ge(args.threshold).float()
            Lu = (F.cross_entropy(logits_u_s, targets_u, reduction="none") * mask).mean()
            loss = Lx + args.lambda_u * Lu
            loss.backward()
            optimizer.step()
            model.zero_grad()
            losses.append(loss.item())
            losses_x.append(Lx.item())
            losses_u.append(Lu.item())
            mask_probs.append(mask.mean().item())
        print(f"Train Epoch: {epoch + 1}/{args.epochs}. Iter: {batch_idx + 1}/{args.eval_step}. "
              f"Loss: {np.mean(losses):.4f}. Loss_x: {np.mean(losses_x):.4f}. Loss_u: {np.mean(losses_u):.4f}. "
              f"Mask: {np.mean(mask_probs):.2f}. ({time.time() - t0:.1f}s)", flush=True)


def main():
    parser = argparse.ArgumentParser(description="PyTorch FixMatch Training")
    parser.add_argument("--num-workers", type=int, default=2, help="number of workers")
    parser.add_argument("--epochs", default=5, type=int)
    parser.add_argument("--eval-step", default=64, type=int, help="number of eval steps to run")
    parser.add_argument("--batch-size", default=16, type=int, help="train batchsize")
    parser.add_argument("--lr", default=0.03, type=float)
    parser.add_argument("--mu", default=3, type=int, help="coefficient of unlabeled batch size")
    parser.add_argument("--lambda-u", default=1, type=float)
    parser.add_argument("--T", default=1, type=float)
    parser.add_argument("--threshold", default=0.95, type=float)
    parser.add_argument("--seed", default=5, type=int)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    labeled_dataset, unlabeled_dataset = LabeledSet(400, seed=1), UnlabeledSet(4000, seed=2)
    labeled_trainloader = DataLoader(labeled_dataset, sampler=RandomSampler(labeled_dataset),
                                     batch_size=args.batch_size, num_workers=args.num_workers, drop_last=True)
    unlabeled_trainloader = DataLoader(unlabeled_dataset, sampler=RandomSampler(unlabeled_dataset),
                                       batch_size=args.batch_size * args.mu, num_workers=args.num_workers,
                                       drop_last=True)
    model = WideishNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    train(args, labeled_trainloader, unlabeled_trainloader, model, optimizer)


if __name__ == "__main__":
    main()
