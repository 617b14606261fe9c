"""Detectron2-style iteration-based training: an endless shuffling TrainingSampler, a BatchSampler and a trivial list collator (the model stacks the dicts), `for data, iteration in zip(data_loader, range(start_iter, max_iter))`, and hooks for periodic logging and evaluation; no epochs at all."""
import argparse
import itertools
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DataLoader, Dataset, Sampler


class TrainingSampler(Sampler):
    """Produce an infinite stream of indices, shuffled anew each pass (detectron2.data.samplers.TrainingSampler)."""

    def __init__(self, size, shuffle=True, seed=0):
        self._size, self._shuffle, self._seed = size, shuffle, seed

    def __iter__(self):
        yield from itertools.islice(self._infinite_indices(), 0, None, 1)  # rank 0 of world size 1

    def _infinite_indices(self):
        g = torch.Generator()
        g.manual_seed(self._seed)
        while True:
            if self._shuffle:
                yield from torch.randperm(self._size, generator=g).tolist()
            else:
                yield from torch.arange(self._size).tolist()


class KeypointDataset(Dataset):
    """Records as dicts ({"image", "target", "id"}), as a dataset mapper returns them; each image is rendered in numpy."""

    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.points = rng.uniform(4, 28, size=(n, 2)).astype(np.float32)
        self.seeds = rng.integers(0, 2**31, size=n)

    def __len__(self):
        return len(self.points)

    def __getitem__(self, idx):
        rng = np.random.default_rng(int(self.seeds[idx]))
        cy, cx = self.points[idx]
        yy, xx = np.mgrid[:32, :32].astype(np.float32)
        img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
        img += 0.3 * rng.standard_normal((32, 32)).astype(np.float32)
        for _ in range(6):  # a cheap denoise, the deliberately slow part
            img = (img + np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1)) / 5
        time.sleep(0.001)  # decoding from disk
        return {"image": torch.from_numpy(img)[None], "target": torch.from_numpy(self.points[idx] / 32.0), "id": idx}


def trivial_batch_collator(batch):
    """A batch collator that does nothing."""
    return batch


def worker_init_reset_seed(worker_id):
    seed = (torch.initial_seed() + worker_id) % 2**31
    np.random.seed(seed)


class KeypointNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=2)
        self.head = nn.Linear(32 * 16 * 16, 2)

    def forward(self, batched_inputs):
        images = torch.stack([d["image"] for d in batched_inputs])
        x = F.relu(self.conv2(F.relu(self.conv1(images))))
        pred = self.head(x.flatten(1))
        if self.training:
            targets = torch.stack([d["target"] for d in batched_inputs])
            return {"loss_keypoint": F.smooth_l1_loss(pred, targets, beta=0.05)}
        return pred


class PeriodicWriter:
    def __init__(self, period):
        self.period, self.t0 = period, time.perf_counter()

    def after_step(self, trainer):
        it = trainer.iter
        if (it + 1) % self.period == 0 or it + 1 == trainer.max_iter:
            losses = trainer.recent_losses[-self.period:]
            print(f"iter: {it + 1}  total_loss: {np.median(losses):.5f}  "
                  f"time: {time.perf_counter() - self.t0:.1f}s", flush=True)


class EvalHook:
    def __init__(self, period, loader):
        self.period, self.loader = period, loader

    def after_step(self, trainer):
        it = trainer.iter
        if (it + 1) % self.period == 0 or it + 1 == trainer.max_iter:
            model = trainer.model
            model.eval()
            err, n = 0.0, 0
            with torch.no_grad():
                for batch in self.loader:
                    pred = model(batch)
                    tgt = torch.stack([d["target"] for d in batch])
                    err += (pred - tgt).abs().sum().item() * 32
                    n += tgt.numel()
            model.train()
            print(f"eval @ iter {it + 1}: mean abs error {err / n:.3f} px", flush=True)


class SimpleTrainer:
    def __init__(self, model, data_loader, optimizer, hooks, max_iter):
        self.model, self.data_loader, self.optimizer = model, data_loader, optimizer
        self.hooks, self.max_iter = hooks, max_iter
        self.recent_losses, self.iter = [], 0

    def train(self, start_iter=0):
        self.model.train()
        for data, self.iter in zip(self.data_loader, range(start_iter, self.max_iter)):
            loss_dict = self.model(data)
            losses = sum(loss_dict.values())
            self.optimizer.zero_grad()
            losses.backward()
            self.optimizer.step()
            self.recent_losses.append(losses.item())
            for h in self.hooks:
                h.after_step(self)


def build_train_loader(dataset, total_batch_size, num_workers, seed):
    sampler = TrainingSampler(len(dataset), seed=seed)
    batch_sampler = BatchSampler(sampler, total_batch_size, drop_last=True)
    return DataLoader(dataset, batch_sampler=batch_sampler, num_workers=num_workers,
                      collate_fn=trivial_batch_collator, worker_init_fn=worker_init_reset_seed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-iter", type=int, default=800)
    parser.add_argument("--ims-per-batch", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--eval-period", type=int, default=400)
    args = parser.parse_args()

    torch.manual_seed(0)
    train_loader = build_train_loader(KeypointDataset(8000, seed=0), args.ims_per_batch, args.num_workers, seed=0)
    test_loader = DataLoader(KeypointDataset(512, seed=1), batch_size=64, num_workers=0,
                             collate_fn=trivial_batch_collator)
    model = KeypointNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    trainer = SimpleTrainer(model, train_loader, optimizer,
                            [PeriodicWriter(100), EvalHook(args.eval_period, test_loader)], args.max_iter)
    trainer.train()
    print(f"done: {trainer.iter + 1} iterations", flush=True)


if __name__ == "__main__":
    main()
