"""Training entry point of a small project: data and model come from the q_2_lib package beside it. The worker count
is derived from the Slurm allocation (one CPU kept for the main process), a common habit in cluster code."""
import os
import time

import torch
import torch.nn.functional as F

from q_2_lib.data import build_loaders
from q_2_lib.models import conv1d_classifier

NUM_WORKERS = max(0, int(os.environ.get("SLURM_CPUS_PER_TASK", "4")) - 1)  # one CPU for the main process
EPOCHS = 6
BATCH_SIZE = 64


def train_one_epoch(model, loader, optimizer, scheduler):
    model.train()
    total, batches = 0.0, 0
    for signals, labels in loader:
        logits = model(signals)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        total += loss.item()
        batches += 1
    return total / batches, batches


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = seen = 0
    for signals, labels in loader:
        correct += (model(signals).argmax(1) == labels).sum().item()
        seen += len(labels)
    return correct / seen


def main():
    torch.manual_seed(0)
    train_loader, val_loader = build_loaders(batch_size=BATCH_SIZE, num_workers=NUM_WORKERS)
    model = conv1d_classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS * len(train_loader))
    print(f"workers {NUM_WORKERS}, {len(train_loader)} batches an epoch", flush=True)
    start = time.time()
    for epoch in range(EPOCHS):
        t0 = time.time()
        loss, batches = train_one_epoch(model, train_loader, optimizer, scheduler)
        acc = evaluate(model, val_loader)
        print(f"epoch {epoch} loss {loss:.4f} batches {batches} val_acc {acc:.3f} time {time.time() - t0:.1f}s",
              flush=True)
    print(f"total {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
