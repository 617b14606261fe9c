"""Variable-length sequences with a bucketing BatchSampler (no batch_size= on the DataLoader)."""
import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler


class SeqDataset(Dataset):
    def __init__(self, n=2000, seed=0):
        rng = np.random.default_rng(seed)
        self.lengths = rng.integers(20, 120, size=n)
        self.seeds = rng.integers(0, 2**31, size=n)
        self.labels = rng.integers(0, 5, size=n)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, idx):
        r = np.random.default_rng(int(self.seeds[idx]))
        L = int(self.lengths[idx])
        feats = r.standard_normal((L, 40)).astype(np.float32)
        # fake "feature extraction": a few FFT-based smoothing passes per item
        for _ in range(6):
            spec = np.fft.rfft(feats, axis=0)
            spec[L // 4:] *= 0.5
            feats = np.fft.irfft(spec, n=L, axis=0).astype(np.float32)
            feats = (feats - feats.mean(0)) / (feats.std(0) + 1e-5)
        return torch.from_numpy(feats), int(self.labels[idx])


class BucketBatchSampler(Sampler):
    """Groups indices of similar length into batches; yields lists of indices."""

    def __init__(self, lengths, batch_size, bucket_size_multiplier=8, shuffle=True, drop_last=False):
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.bucket_size = batch_size * bucket_size_multiplier
        self.shuffle = shuffle
        self.drop_last = drop_last

    def __iter__(self):
        indices = list(range(len(self.lengths)))
        if self.shuffle:
            random.shuffle(indices)
        batches = []
        for i in range(0, len(indices), self.bucket_size):
            bucket = sorted(indices[i:i + self.bucket_size], key=lambda j: self.lengths[j])
            for k in range(0, len(bucket), self.batch_size):
                batch = bucket[k:k + self.batch_size]
                if len(batch) < self.batch_size and self.drop_last:
                    continue
                batches.append(batch)
        if self.shuffle:
            random.shuffle(batches)
        for b in batches:
            yield b

    def __len__(self):
        n_full = 0
        for i in range(0, len(self.lengths), self.bucket_size):
            m = min(self.bucket_size, len(self.lengths) - i)
            n_full += m // self.batch_size if self.drop_last else -(-m // self.batch_size)
        return n_full


def collate_fn(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([s.shape[0] for s in seqs])
    return pad_sequence(seqs, batch_first=True), lengths, torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(64, 64, 5, padding=2), nn.ReLU())
        self.out = nn.Linear(64, 5)

    def forward(self, x, lengths):
        h = self.conv(x.transpose(1, 2))
        mask = (torch.arange(h.shape[2])[None] < lengths[:, None]).float()
        h = (h * mask[:, None]).sum(2) / lengths[:, None]
        return self.out(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--num-workers", type=int, default=1)
    args = ap.parse_args()
    random.seed(0)
    torch.manual_seed(0)
    dataset = SeqDataset()
    sampler = BucketBatchSampler(dataset.lengths, args.batch_size, drop_last=False)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_fn,
                        num_workers=args.num_workers)
    model = Classifier()
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        t0 = time.time()
        nb = 0
        total = 0.0
        for feats, lengths, labels in loader:
            logits = model(feats, lengths)
            loss = nn.functional.cross_entropy(logits, labels)
            optim.zero_grad()
            loss.backward()
            optim.step()
            total += loss.item()
            nb += 1
        print(f"EPOCH {epoch} batches={nb} time={time.time() - t0:.2f}s loss={total / nb:.4f}")


if __name__ == "__main__":
    main()
