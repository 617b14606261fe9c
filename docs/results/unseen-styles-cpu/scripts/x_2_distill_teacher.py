"""Knowledge-distillation style (Hinton KD, as in many KD repos and the PyTorch KD tutorial): a larger teacher is
first fitted for 1 epoch on the same loader, then frozen (`teacher.eval()`, forward under `torch.no_grad()`), and a
small student trains with `alpha * KL(soft student || soft teacher) * T^2 + (1 - alpha) * CE`. Both phases iterate the
SAME DataLoader object. Options via argparse with `--num_workers` (underscore, default 1), `--kd_epochs 3`.

A correct report: the loop that dominates is train_student()'s `for step, (x, y) in enumerate(loader):` (3 epochs of
24 batches: 768 items, batch 32); the teacher's 1 epoch in fit_teacher() is also 24 batches through the same loader;
the count comes from `--num_workers` (default 1): the edit is `--num_workers N` on the command line.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Spectra(Dataset):
    def __init__(self, n=768, dim=64, seed=0):
        rng = np.random.default_rng(seed)
        self.y = rng.integers(0, 5, n)
        self.dim = dim

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = int(self.y[i])
        t = np.linspace(0, 1, 512)
        sig = np.sin(2 * np.pi * (y + 2) * 4 * t) + 0.8 * g.standard_normal(512)
        feat = np.abs(np.fft.rfft(sig))[: self.dim]
        time.sleep(0.003)  # stands for reading the clip
        return torch.tensor(feat / feat.max(), dtype=torch.float32), y


def mlp(width):
    return nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 5))


def fit_teacher(teacher, loader, epochs):
    opt = torch.optim.Adam(teacher.parameters(), lr=2e-3)
    teacher.train()
    for ep in range(epochs):
        tot = 0.0
        for x, y in loader:
            loss = F.cross_entropy(teacher(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        print(f"teacher epoch {ep} loss {tot / len(loader):.4f}")


def kd_loss(s_logits, t_logits, y, T, alpha):
    soft = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1), reduction="batchmean")
    return alpha * soft * T * T + (1 - alpha) * F.cross_entropy(s_logits, y)


def train_student(student, teacher, loader, args):
    opt = torch.optim.SGD(student.parameters(), lr=args.lr, momentum=0.9)
    teacher.eval()
    for epoch in range(args.kd_epochs):
        student.train()
        tot = 0.0
        for step, (x, y) in enumerate(loader):
            with torch.no_grad():
                t_logits = teacher(x)
            s_logits = student(x)
            loss = kd_loss(s_logits, t_logits, y, args.temperature, args.alpha)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        print(f"student epoch {epoch} kd-loss {tot / (step + 1):.4f} ({step + 1} batches)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num_workers", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--teacher_epochs", type=int, default=1)
    p.add_argument("--kd_epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--temperature", type=float, default=4.0)
    p.add_argument("--alpha", type=float, default=0.7)
    args = p.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Spectra(), batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    print(f"num_workers={args.num_workers} batches={len(loader)}")
    teacher, student = mlp(512), mlp(32)
    fit_teacher(teacher, loader, args.teacher_epochs)
    train_student(student, teacher, loader, args)


if __name__ == "__main__":
    main()
