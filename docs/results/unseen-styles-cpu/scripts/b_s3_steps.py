"""Step-based training (no epochs): while step < max_steps, re-creating iter(loader)."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class NoisyPatches(Dataset):
    def __init__(self, n=2000, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.integers(0, 256, size=(n, 48, 48), dtype=np.uint8)
        self.y = rng.integers(0, 10, size=n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        img = Image.fromarray(self.x[i]).resize((36, 36)).rotate(7)
        a = np.asarray(img, dtype=np.float32) / 255.0
        for _ in range(4):
            a = np.tanh(a + np.random.normal(0, 0.05, a.shape).astype(np.float32))
        return torch.from_numpy(a)[None], torch.tensor(self.y[i])


def get_model():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-steps", type=int, default=186)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=1)
    p.add_argument("--log-every", type=int, default=31)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = NoisyPatches()
    train_loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, drop_last=True)
    print(f"len(train_loader)={len(train_loader)} max_steps={args.max_steps}")
    model = get_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    crit = nn.CrossEntropyLoss()

    step = 0
    data_iter = iter(train_loader)
    epoch = 0
    epoch_batches = 0
    t_epoch = time.time()
    t_log = time.time()
    while step < args.max_steps:
        try:
            x, y = next(data_iter)
        except StopIteration:
            print(f"EPOCH {epoch} batches={epoch_batches} time={time.time() - t_epoch:.2f}s")
            epoch += 1
            epoch_batches = 0
            t_epoch = time.time()
            data_iter = iter(train_loader)
            x, y = next(data_iter)
        loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        epoch_batches += 1
        if step % args.log_every == 0:
            print(f"step {step}/{args.max_steps} loss {loss.item():.4f} "
                  f"{(time.time() - t_log) / args.log_every * 1000:.1f} ms/step")
            t_log = time.time()
    print(f"EPOCH {epoch} (partial) batches={epoch_batches} time={time.time() - t_epoch:.2f}s")
    print(f"done: {step} steps")


if __name__ == "__main__":
    main()
