"""The "automatic mixed precision" recipe as written for a GPU and run on a laptop: autocast and GradScaler are
switched on only when CUDA is there (`enabled=use_amp`), the step goes through scaler.scale(loss).backward(),
scaler.unscale_() before clipping, scaler.step() and scaler.update(). Scalars go to TensorBoard through a
SummaryWriter every few steps, pin_memory follows the device, and --num-workers defaults to 4 as in most repos."""
import argparse
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.tensorboard import SummaryWriter


def get_args():
    p = argparse.ArgumentParser(description="AMP + TensorBoard training")
    p.add_argument("--epochs", default=3, type=int)
    p.add_argument("-b", "--batch-size", default=64, type=int)
    p.add_argument("--num-workers", default=4, type=int)
    p.add_argument("--lr", default=3e-3, type=float)
    p.add_argument("--clip-grad", default=1.0, type=float)
    p.add_argument("--log-every", default=10, type=int)
    p.add_argument("--logdir", default=os.path.join(tempfile.gettempdir(), "aa2_runs"))
    p.add_argument("--seed", default=42, type=int)
    return p.parse_args()


class NoisyTabular(Dataset):
    """Rows of 64 features; each item gets a fresh noise draw and a slow feature cross (pairwise products)."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.w = rng.standard_normal((64, 3)).astype(np.float32)
        self.x = rng.standard_normal((n, 64)).astype(np.float32)
        self.y = (self.x @ self.w).argmax(1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        row = self.x[i] + 0.1 * np.random.standard_normal(64).astype(np.float32)
        crosses = np.outer(row[:32], row[32:]).ravel()          # 1024 pairwise products
        for _ in range(60):                                     # a deliberately slow normalisation pass
            crosses = crosses / (1.0 + np.abs(crosses).mean())
        return torch.from_numpy(np.concatenate([row, crosses])), int(self.y[i])


class MLP(nn.Module):
    def __init__(self, d_in=64 + 1024, d_hidden=512, n_out=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, d_hidden), nn.GELU(), nn.Dropout(0.1),
            nn.Linear(d_hidden, d_hidden), nn.GELU(),
            nn.Linear(d_hidden, n_out))

    def forward(self, x):
        return self.net(x)


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    torch.backends.cudnn.benchmark = True

    train_ds = NoisyTabular(4096, args.seed)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, pin_memory=device.type == "cuda", drop_last=True)

    model = MLP().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    writer = SummaryWriter(log_dir=args.logdir)

    global_step = 0
    for epoch in range(args.epochs):
        model.train()
        start = time.time()
        epoch_loss, n_batches = 0.0, 0
        for inputs, targets in train_loader:
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                outputs = model(inputs)
                loss = F.cross_entropy(outputs, targets)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
            scaler.step(optimizer)
            scaler.update()
            epoch_loss += loss.item()
            n_batches += 1
            global_step += 1
            if global_step % args.log_every == 0:
                writer.add_scalar("train/loss", loss.item(), global_step)
                writer.add_scalar("train/lr", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("train/epoch_loss", epoch_loss / n_batches, epoch)
        print(f"Epoch {epoch}: loss {epoch_loss / n_batches:.4f} over {n_batches} batches "
              f"in {time.time() - start:.1f}s")
    writer.close()


if __name__ == "__main__":
    main()
