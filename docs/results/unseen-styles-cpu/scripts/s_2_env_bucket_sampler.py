"""Bucketed variable-length sequences: `batch_sampler=BucketBatchSampler(...)`, num_workers from
`int(os.environ.get("NUM_WORKERS", "0"))`, dict batches from a padding collate, and the step as a closure `step_fn`
defined anew inside each epoch. Correct edit: set NUM_WORKERS=N in the environment."""
import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Sampler


class Seqs(Dataset):
    def __init__(self, n=640):
        g = np.random.default_rng(1)
        self.lens = g.integers(5, 40, size=n)
        self.data = [g.integers(1, 50, size=L) for L in self.lens]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        s = self.data[i]
        feats = np.cumsum(np.sin(s[:, None] * np.arange(1, 9)[None, :]), axis=0)  # numpy per-item cost
        time.sleep(0.0008)
        return {"ids": torch.from_numpy(s.astype(np.int64)), "label": int(feats[-1, 0] > 0)}


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, seed=0):
        self.lengths, self.batch_size, self.seed, self.epoch = lengths, batch_size, seed, 0

    def __iter__(self):
        rnd = random.Random(self.seed + self.epoch)
        order = sorted(range(len(self.lengths)), key=lambda i: (self.lengths[i], rnd.random()))
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        rnd.shuffle(batches)
        self.epoch += 1
        return iter(batches)

    def __len__(self):
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


def pad_collate(items):
    L = max(len(it["ids"]) for it in items)
    ids = torch.zeros(len(items), L, dtype=torch.long)
    for k, it in enumerate(items):
        ids[k, :len(it["ids"])] = it["ids"]
    return {"ids": ids, "mask": ids != 0, "label": torch.tensor([it["label"] for it in items])}


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 64, padding_idx=0)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.head = nn.Linear(64, 2)

    def forward(self, ids, mask):
        h, _ = self.rnn(self.emb(ids))
        h = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.head(h)


def main():
    torch.manual_seed(0)
    ds = Seqs()
    loader = DataLoader(ds, batch_sampler=BucketBatchSampler(ds.lens, 32), collate_fn=pad_collate,
                        num_workers=int(os.environ.get("NUM_WORKERS", "0")))
    model = Encoder()
    optim = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        def step_fn(batch):
            logits = model(batch["ids"], batch["mask"])
            loss = nn.functional.cross_entropy(logits, batch["label"])
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            return loss.detach()

        losses = []
        for batch in loader:
            losses.append(step_fn(batch))
        print(f"epoch {epoch}: {len(losses)} batches, loss {torch.stack(losses).mean():.4f}")


if __name__ == "__main__":
    main()
