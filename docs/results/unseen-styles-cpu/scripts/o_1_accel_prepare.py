"""Hugging Face Accelerate style, written out by hand: the script builds its DataLoader with `--workers`, then
`accelerator.prepare(model, optimizer, train_dataloader)` rebuilds it as a *new* DataLoader subclass from the old
one's attributes (as accelerate's `prepare_data_loader` builds a `DataLoaderShard` from the user's `batch_sampler`,
`num_workers`, `collate_fn`, ...), whose `__iter__` moves each batch to the device. The user's own loader is never
iterated. The loop runs inside `training_function(config, args)` (accelerate's examples), under
`with accelerator.accumulate(model):`, calls `accelerator.backward(loss)` (no `loss.backward()` in the script's
loop), and the wrapped optimizer only steps every `--grad-accum` batches.

Data: 32x32 RGB uint8 images augmented in numpy per sample (pad+crop, flip, colour, 20 smoothing passes: about
1 ms a sample, 64 ms a batch of 64) against a small CNN step of about 30-40 ms on one core. With the default
`--workers 0` the loop waits for data most of each step.

A correct advice on 2 CPUs: 1 worker (the most 2 CPUs hold beside the main process), measured in the run, with the
loop still waiting (ask for more CPUs), and the edit on the *user's* flag, `--workers 1`, since the rebuilt loader
copies `num_workers` from the user's DataLoader (`num_workers=dataloader.num_workers` inside `prepare_data_loader`
is no place to set it).
"""
import argparse
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

_LOADER_KWARGS = ("num_workers", "collate_fn", "pin_memory", "timeout", "worker_init_fn", "multiprocessing_context",
                  "generator", "prefetch_factor", "persistent_workers")


def send_to_device(batch, device):
    if isinstance(batch, dict):
        return {k: send_to_device(v, device) for k, v in batch.items()}
    return batch.to(device) if torch.is_tensor(batch) else batch


class DataLoaderShard(DataLoader):
    """What `accelerator.prepare` hands back: a DataLoader that moves every batch to the device as it yields it."""

    def __init__(self, dataset, device=None, **kwargs):
        super().__init__(dataset, **kwargs)
        self.device = device

    def __iter__(self):
        for batch in super().__iter__():
            yield send_to_device(batch, self.device)


def prepare_data_loader(dataloader, device):
    kwargs = {k: getattr(dataloader, k) for k in _LOADER_KWARGS}
    return DataLoaderShard(dataloader.dataset, device=device, batch_sampler=dataloader.batch_sampler, **kwargs)


class AcceleratedOptimizer:
    def __init__(self, optimizer, accelerator):
        self.optimizer, self.accelerator = optimizer, accelerator

    def step(self):
        if self.accelerator.sync_gradients:
            self.optimizer.step()

    def zero_grad(self):
        if self.accelerator.sync_gradients:
            self.optimizer.zero_grad()


class Accelerator:
    def __init__(self, gradient_accumulation_steps=1, cpu=True):
        self.device = torch.device("cpu" if cpu or not torch.cuda.is_available() else "cuda")
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.step, self.sync_gradients = 0, True

    def prepare(self, *objs):
        out = []
        for obj in objs:
            if isinstance(obj, DataLoader):
                out.append(prepare_data_loader(obj, self.device))
            elif isinstance(obj, torch.optim.Optimizer):
                out.append(AcceleratedOptimizer(obj, self))
            elif isinstance(obj, nn.Module):
                out.append(obj.to(self.device))
            else:
                out.append(obj)
        return tuple(out)

    @contextmanager
    def accumulate(self, model):
        self.step += 1
        self.sync_gradients = self.step % self.gradient_accumulation_steps == 0
        yield

    def backward(self, loss):
        (loss / self.gradient_accumulation_steps).backward()

    def print(self, *a):
        print(*a, flush=True)


class AugmentedImages(Dataset):
    def __init__(self, n=2560, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 10, n)
        self.images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        for i, c in enumerate(self.labels):  # a class-dependent bright band, so there is something to learn
            self.images[i, 3 * c:3 * c + 4] = np.minimum(self.images[i, 3 * c:3 * c + 4].astype(int) + 90, 255)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        r = np.random.default_rng(idx)
        img = self.images[idx].astype(np.float32) / 255.0
        img = np.pad(img, ((4, 4), (4, 4), (0, 0)), mode="reflect")
        y, x = r.integers(0, 9, 2)
        img = img[y:y + 32, x:x + 32]
        if r.random() < 0.5:
            img = img[:, ::-1]
        img = img * r.uniform(0.7, 1.3, 3).astype(np.float32)
        for _ in range(20):
            img = 0.6 * img + 0.1 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        img = np.ascontiguousarray(((img - 0.5) / 0.25).transpose(2, 0, 1))
        return {"pixel_values": torch.from_numpy(img), "labels": int(self.labels[idx])}


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def training_function(config, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum, cpu=args.cpu)
    torch.manual_seed(config["seed"])
    train_dataloader = DataLoader(AugmentedImages(), shuffle=True, batch_size=config["batch_size"],
                                  num_workers=args.workers, drop_last=True)
    model = SmallCNN()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)

    for epoch in range(config["num_epochs"]):
        model.train()
        total, n = 0.0, 0
        for batch in train_dataloader:
            with accelerator.accumulate(model):
                outputs = model(batch["pixel_values"])
                loss = F.cross_entropy(outputs, batch["labels"])
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            total += loss.item()
            n += 1
        accelerator.print(f"epoch {epoch} loss {total / n:.4f} batches {n}")


def main():
    parser = argparse.ArgumentParser(description="Simple example of a training script (accelerate style).")
    parser.add_argument("--cpu", action="store_true", default=True, help="train on the CPU")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    parser.add_argument("--grad-accum", type=int, default=2)
    args = parser.parse_args()
    config = {"lr": 2e-3, "num_epochs": 6, "seed": 42, "batch_size": 64}
    training_function(config, args)


if __name__ == "__main__":
    main()
