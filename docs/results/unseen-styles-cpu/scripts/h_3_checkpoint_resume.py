"""Preemptible-job style: a checkpoint (model, optimizer, scheduler, epoch) is written to --ckpt-dir after every
epoch, atomically (tmp file + os.replace); with --resume the run continues from the last one, as a requeued Slurm
job does (`#SBATCH --requeue`, `--signal=USR1@90`). StepLR halves the learning rate every 2 epochs."""
import argparse
import os
import signal
from pathlib import Path

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class Spirals(Dataset):
    """Two interleaved noisy spirals; every item is rebuilt from its own seed and lifted to 64 features."""

    def __init__(self, n=1536, seed=0):
        self.n, self.seed = n, seed
        self.lift = torch.randn(2, 64, generator=torch.Generator().manual_seed(seed))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed + 7919 * i)
        label = i % 2
        r = torch.rand(1, generator=g) * 3 + 0.2
        angle = r * 2.5 + label * torch.pi
        point = torch.cat([r * torch.cos(angle), r * torch.sin(angle)]) + 0.05 * torch.randn(2, generator=g)
        feats = point @ self.lift
        for _ in range(120):  # a hand-written "augmentation" pipeline: the per-item CPU cost
            feats = feats - 0.01 * (feats - feats.mean()) + 0.001 * torch.sin(feats)
        return torch.cat([feats, point]), label


def make_model():
    return nn.Sequential(nn.Linear(66, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))


def save_checkpoint(path, **state):
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # a preemption mid-write never leaves half a checkpoint


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    total, batches = 0.0, 0
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    return total / max(batches, 1), batches


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ckpt-dir", type=Path, default=Path("/tmp/h3_ckpt"))
    parser.add_argument("--resume", action="store_true", help="continue from <ckpt-dir>/last.pt if it exists")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--stop-after", type=int, default=None,
                        help="simulate a preemption: exit after this many epochs of this run")
    args = parser.parse_args()

    torch.manual_seed(0)
    args.ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = args.ckpt_dir / "last.pt"
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
    start_epoch = 0
    if args.resume and ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        torch.set_rng_state(ckpt["rng"])
        start_epoch = ckpt["epoch"] + 1
        print(f"resumed from {ckpt_path} at epoch {start_epoch}", flush=True)

    preempted = []
    signal.signal(signal.SIGUSR1, lambda *_: preempted.append(True))  # Slurm's warning before the kill

    loader = DataLoader(Spirals(), batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(start_epoch, args.epochs):
        loss, batches = train_epoch(model, loader, optimizer, criterion)
        scheduler.step()
        print(f"epoch {epoch} loss {loss:.4f} batches {batches} lr {scheduler.get_last_lr()[0]:.4f}", flush=True)
        save_checkpoint(ckpt_path, model=model.state_dict(), optimizer=optimizer.state_dict(),
                        scheduler=scheduler.state_dict(), epoch=epoch, rng=torch.get_rng_state())
        if preempted or (args.stop_after is not None and epoch + 1 - start_epoch >= args.stop_after):
            print(f"stopping after epoch {epoch}; rerun with --resume to continue", flush=True)
            return
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
