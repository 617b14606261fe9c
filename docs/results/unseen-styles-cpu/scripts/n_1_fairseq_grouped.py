"""fairseq habit: the epoch iterator is wrapped in a GroupedIterator that hands over lists of `--update-freq` batches; the outer loop walks the groups and an inner loop over each list does forward/backward (gradient accumulation), then one optimizer step; batches are nested dicts (sample["net_input"]["src_tokens"])."""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class StrokeDataset(Dataset):
    """32x32 strokes: a class-dependent random walk traced in numpy, smeared by repeated 3x3 box filters."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed
        self.dirs = np.random.default_rng(0).normal(0, 1, size=(10, 2))

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        rng = np.random.default_rng(self.seed * 7919 + index)
        label = int(rng.integers(10))
        pos = np.array([16.0, 16.0])
        img = np.zeros((32, 32), np.float32)
        for _ in range(60):
            pos = np.clip(pos + self.dirs[label] + rng.normal(0, 1.2, size=2), 0, 31)
            img[int(pos[0]), int(pos[1])] += 1.0
        for _ in range(12):
            p = np.pad(img, 1, mode="edge")
            img = sum(p[i:i + 32, j:j + 32] for i in range(3) for j in range(3)) / 9.0
        return {"id": index, "source": torch.from_numpy(img).unsqueeze(0), "target": label}


def collate(samples):
    """fairseq-like collater: a nested dict with net_input and ntokens."""
    if len(samples) == 0:
        return {}
    src = torch.stack([s["source"] for s in samples])
    return {
        "id": torch.tensor([s["id"] for s in samples]),
        "nsentences": len(samples),
        "ntokens": len(samples),
        "net_input": {"src_tokens": src},
        "target": torch.tensor([s["target"] for s in samples]),
    }


class GroupedIterator:
    """Wrapper around an iterable that returns groups (chunks) of items (fairseq.data.iterators.GroupedIterator)."""

    def __init__(self, iterable, chunk_size):
        self._len = int(math.ceil(len(iterable) / float(chunk_size)))
        self.itr = iter(iterable)
        self.chunk_size = chunk_size

    def __len__(self):
        return self._len

    def __iter__(self):
        return self

    def __next__(self):
        chunk = []
        try:
            for _ in range(self.chunk_size):
                chunk.append(next(self.itr))
        except StopIteration as e:
            if len(chunk) == 0:
                raise e
        return chunk


class ConvClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.decoder = nn.Linear(32 * 8 * 8, 10)

    def forward(self, src_tokens):
        return self.decoder(self.encoder(src_tokens).flatten(1))


class Criterion:
    def __call__(self, model, sample):
        logits = model(**sample["net_input"])
        loss = F.cross_entropy(logits, sample["target"], reduction="sum")
        return loss, sample["nsentences"], {"loss": loss.item(), "nsentences": sample["nsentences"]}


def train(args, epoch, model, criterion, optimizer, epoch_itr):
    itr = GroupedIterator(epoch_itr, args.update_freq)
    logs, n_batches = [], 0
    for i, samples in enumerate(itr):
        optimizer.zero_grad()
        sample_size = 0
        for sample in samples:
            loss, ss, log = criterion(model, sample)
            loss.backward()
            sample_size += ss
            logs.append(log)
            n_batches += 1
        for p in model.parameters():
            if p.grad is not None:
                p.grad.div_(sample_size)
        nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm)
        optimizer.step()
    mean = sum(l["loss"] for l in logs) / sum(l["nsentences"] for l in logs)
    return mean, n_batches, i + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-epoch", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--update-freq", type=int, default=4)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clip-norm", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    dataset = StrokeDataset(3200, seed=args.seed)
    epoch_itr = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, collate_fn=collate,
                           num_workers=args.num_workers)
    model = ConvClassifier()
    criterion = Criterion()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(1, args.max_epoch + 1):
        t0 = time.time()
        loss, n_batches, n_updates = train(args, epoch, model, criterion, optimizer, epoch_itr)
        print(f"epoch {epoch:03d} | loss {loss:.4f} | batches {n_batches} | updates {n_updates} | "
              f"wall {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
