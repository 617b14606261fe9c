"""timm style with `--use-multi-epochs-loader` (timm/data/loader.py): `create_loader()` picks `MultiEpochsDataLoader`,
a DataLoader subclass that wraps its own batch_sampler in an endless `_RepeatSampler` and makes ONE iterator in
`__init__` (`self.iterator = super().__iter__()`); each epoch's `__iter__` then only pulls `len(self)` batches from
that iterator with `next()`. Its workers start once and live for the whole run, with no `persistent_workers`. The loop
is timm's `train_one_epoch(epoch, model, loader, optimizer, loss_fn, args)` with `last_idx = len(loader) - 1`,
`-j/--workers` as the flag, and `MultiEpochsDataLoader(dataset, **loader_args)`.

Data: 32x32 RGB images augmented in numpy per sample (about 1 ms a sample, 48 ms a batch of 48), a small CNN step of
about 25 ms on one core; 1 worker by default.

What a correct report looks like: the DataLoader is iterated once (at its own construction, inside `create_loader`),
so a tool that changes counts where an epoch makes a new iterator cannot try any here; it should say so (not "too
short") and fall back. On 2 CPUs the count advised is 1 worker, with the loop still waiting: ask for more CPUs.
The edit is `-j 1` / `--workers 1`; `persistent_workers=True` is no cure to suggest (the workers already persist),
and an edit that adds it to `MultiEpochsDataLoader(dataset, **loader_args)` would clash with `loader_args`' own key.
Every epoch must still train `len(loader)` batches.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data


class MultiEpochsDataLoader(torch.utils.data.DataLoader):

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._DataLoader__initialized = False
        if self.batch_sampler is None:
            self.sampler = _RepeatSampler(self.sampler)
        else:
            self.batch_sampler = _RepeatSampler(self.batch_sampler)
        self._DataLoader__initialized = True
        self.iterator = super().__iter__()

    def __len__(self):
        return len(self.sampler) if self.batch_sampler is None else len(self.batch_sampler.sampler)

    def __iter__(self):
        for i in range(len(self)):
            yield next(self.iterator)


class _RepeatSampler(object):
    """ Sampler that repeats forever. """

    def __init__(self, sampler):
        self.sampler = sampler

    def __iter__(self):
        while True:
            yield from iter(self.sampler)


class ImageDataset(torch.utils.data.Dataset):
    def __init__(self, n=1920, seed=0):
        rng = np.random.default_rng(seed)
        self.targets = rng.integers(0, 10, n)
        self.imgs = rng.integers(0, 200, (n, 32, 32, 3), dtype=np.uint8)
        for i, c in enumerate(self.targets):
            self.imgs[i, :, 3 * c:3 * c + 4] += 55

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        r = np.random.default_rng(index)
        img = self.imgs[index].astype(np.float32) / 255.0
        img = np.pad(img, ((4, 4), (4, 4), (0, 0)), mode="reflect")
        y, x = r.integers(0, 9, 2)
        img = img[y:y + 32, x:x + 32]
        if r.random() < 0.5:
            img = img[::-1]
        for _ in range(20):
            img = 0.6 * img + 0.1 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        img = (img - np.array([0.45, 0.45, 0.45], np.float32)) / np.array([0.25, 0.25, 0.25], np.float32)
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(self.targets[index])


def create_loader(dataset, batch_size, is_training=False, num_workers=1, pin_memory=False,
                  use_multi_epochs_loader=False, persistent_workers=True):
    loader_class = torch.utils.data.DataLoader
    if use_multi_epochs_loader:
        loader_class = MultiEpochsDataLoader
    loader_args = dict(
        batch_size=batch_size,
        shuffle=is_training,
        num_workers=num_workers,
        sampler=None,
        collate_fn=torch.utils.data.dataloader.default_collate,
        pin_memory=pin_memory,
        drop_last=is_training,
        persistent_workers=persistent_workers and num_workers > 0,
    )
    try:
        loader = loader_class(dataset, **loader_args)
    except TypeError:
        loader_args.pop('persistent_workers')  # only in Pytorch 1.7+
        loader = loader_class(dataset, **loader_args)
    return loader


class ResNetTiny(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                   nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32))
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.block(F.max_pool2d(x, 2).repeat_interleave(2, 2).repeat_interleave(2, 3)))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args, lr_scheduler=None):
    model.train()
    end = time.time()
    last_idx = len(loader) - 1
    num_updates = epoch * len(loader)
    losses, data_time = [], 0.0
    for batch_idx, (input, target) in enumerate(loader):
        last_batch = batch_idx == last_idx
        data_time += time.time() - end
        output = model(input)
        loss = loss_fn(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        num_updates += 1
        losses.append(loss.item())
        if last_batch or batch_idx % args.log_interval == 0:
            print(f"Train: {epoch} [{batch_idx:>4d}/{len(loader)}]  Loss: {losses[-1]:.4f}  "
                  f"Data: {data_time / (batch_idx + 1) * 1e3:.1f} ms", flush=True)
        if lr_scheduler is not None:
            lr_scheduler.step_update(num_updates=num_updates)
        end = time.time()
    return {"loss": sum(losses) / len(losses), "batches": len(losses)}


def main():
    parser = argparse.ArgumentParser(description="PyTorch ImageNet Training (timm style)")
    parser.add_argument("-b", "--batch-size", type=int, default=48)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("-j", "--workers", type=int, default=1, metavar="N", help="how many training processes to use")
    parser.add_argument("--pin-mem", action="store_true", default=False)
    parser.add_argument("--use-multi-epochs-loader", action="store_true", default=True,
                        help="use the multi-epochs-loader to save time at the beginning of every epoch")
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    dataset_train = ImageDataset()
    loader_train = create_loader(dataset_train, batch_size=args.batch_size, is_training=True,
                                 num_workers=args.workers, pin_memory=args.pin_mem,
                                 use_multi_epochs_loader=args.use_multi_epochs_loader)
    model = ResNetTiny()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-5)
    train_loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    for epoch in range(args.epochs):
        metrics = train_one_epoch(epoch, model, loader_train, optimizer, train_loss_fn, args)
        print(f"epoch {epoch} loss {metrics['loss']:.4f} batches {metrics['batches']}", flush=True)


if __name__ == "__main__":
    main()
