"""Step-budgeted training with endless epochs (`for epoch in itertools.count()`), `enumerate(loader, start=1)`,
and a collate_fn that returns a namedtuple batch (inputs, targets, mask) of padded variable-length sequences.
The worker count is taken from the CPU mask, with no flag: `min(8, len(os.sched_getaffinity(0)))`.
The run ends with `return` from inside the batch loop once the step budget is spent."""
import argparse
import itertools
import os
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

Batch = namedtuple("Batch", ["inputs", "targets", "mask"])

VOCAB = 500


class SyntheticText(Dataset):
    """Each item is 'tokenised' on the fly: a Markov chain over a small vocabulary, label = dominant topic."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed
        rng = np.random.default_rng(seed)
        self.topics = rng.dirichlet(np.ones(VOCAB) * 0.05, size=4)   # 4 topic distributions
        self.labels = rng.integers(0, 4, size=n)

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng(self.seed * 1_000_003 + idx)
        label = int(self.labels[idx])
        length = int(rng.integers(40, 160))
        mix = 0.6 * self.topics[label] + 0.4 * self.topics[rng.integers(0, 4)]
        tokens = np.empty(length, dtype=np.int64)
        prev = 0
        for j in range(length):   # token by token, as a sampler would
            p = mix if j % 3 else np.roll(mix, prev % 7)
            prev = tokens[j] = rng.choice(VOCAB, p=p / p.sum())
        return torch.from_numpy(tokens), label


def pad_collate(items):
    seqs, labels = zip(*items)
    longest = max(len(s) for s in seqs)
    inputs = torch.zeros(len(seqs), longest, dtype=torch.long)
    mask = torch.zeros(len(seqs), longest, dtype=torch.bool)
    for i, s in enumerate(seqs):
        inputs[i, :len(s)] = s
        mask[i, :len(s)] = True
    return Batch(inputs=inputs, targets=torch.tensor(labels), mask=mask)


class BagModel(nn.Module):
    def __init__(self, vocab=VOCAB, dim=64, n_cls=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, n_cls))

    def forward(self, inputs, mask):
        e = self.emb(inputs) * mask.unsqueeze(-1)
        pooled = e.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return self.mlp(pooled)


def train(args):
    torch.manual_seed(args.seed)
    num_workers = min(8, len(os.sched_getaffinity(0)))
    print(f"using {num_workers} dataloader workers", flush=True)
    loader = DataLoader(SyntheticText(args.n), batch_size=args.batch_size, shuffle=True,
                        collate_fn=pad_collate, num_workers=num_workers)
    model = BagModel()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    global_step = 0
    for epoch in itertools.count():
        epoch_loss = 0.0
        for step, batch in enumerate(loader, start=1):
            logits = model(batch.inputs, batch.mask)
            loss = criterion(logits, batch.targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
            global_step += 1
            if global_step >= args.max_steps:
                print(f"epoch {epoch} loss {epoch_loss / step:.4f} batches {step} (budget reached at step {global_step})")
                return model
        print(f"epoch {epoch} loss {epoch_loss / step:.4f} batches {step}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=450)   # 100 batches an epoch: 4.5 epochs
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    train(parser.parse_args())
