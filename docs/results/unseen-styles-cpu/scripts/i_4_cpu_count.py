"""Workers sized from the machine, no flag: `DataLoader(..., num_workers=os.cpu_count())`, as in many blog posts and
starter repos ("use all cores"). Each sample is a @dataclass and a custom collate_fn stacks them into a Batch
dataclass with a `.to()` method (as in detection / NLP codebases whose batches are not tuples)."""
import argparse
import os
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class Sample:
    tokens: torch.Tensor
    mask: torch.Tensor
    label: int


@dataclass
class Batch:
    tokens: torch.Tensor
    mask: torch.Tensor
    labels: torch.Tensor

    def to(self, device):
        return Batch(self.tokens.to(device), self.mask.to(device), self.labels.to(device))

    def __len__(self):
        return self.labels.shape[0]


class SyntheticText(Dataset):
    """Variable-length 'sentences' of token ids; the label is whether token 7 appears more often than token 3.
    Each item is tokenised from a character string built on the fly (the loader's CPU work)."""

    vocab = 64

    def __init__(self, n, max_len=48):
        self.n, self.max_len = n, max_len

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(31 * i + 5)
        length = int(torch.randint(8, self.max_len + 1, (1,), generator=g))
        ids = torch.randint(0, self.vocab, (length,), generator=g)
        text = " ".join(f"w{int(t)}" for t in ids)
        for _ in range(250):  # a toy normaliser, run over and over: pure-Python CPU work
            text = " ".join(w.lower().strip() for w in text.split(" "))
        tokens = torch.tensor([int(w[1:]) for w in text.split(" ")])
        label = int((tokens == 7).sum() > (tokens == 3).sum())
        return Sample(tokens, torch.ones(length, dtype=torch.bool), label)


def collate_samples(samples):
    longest = max(len(s.tokens) for s in samples)
    tokens = torch.zeros(len(samples), longest, dtype=torch.long)
    mask = torch.zeros(len(samples), longest, dtype=torch.bool)
    for row, s in enumerate(samples):
        tokens[row, :len(s.tokens)] = s.tokens
        mask[row, :len(s.tokens)] = s.mask
    return Batch(tokens, mask, torch.tensor([s.label for s in samples]))


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab, dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 2))

    def forward(self, tokens, mask):
        e = self.emb(tokens) * mask.unsqueeze(-1)
        return self.mlp(e.sum(1) / mask.sum(1, keepdim=True))


def train(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = SyntheticText(args.n)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, collate_fn=collate_samples,
                        num_workers=os.cpu_count(), pin_memory=torch.cuda.is_available())
    model = BagOfEmbeddings(SyntheticText.vocab).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        running, n_batches, correct, seen = 0.0, 0, 0, 0
        for batch in loader:
            batch = batch.to(device)
            logits = model(batch.tokens, batch.mask)
            loss = loss_fn(logits, batch.labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
            correct += (logits.argmax(-1) == batch.labels).sum().item()
            seen += len(batch)
            n_batches += 1
        print(f"epoch {epoch} loss {running / n_batches:.4f} acc {correct / seen:.3f} batches {n_batches} "
              f"time {time.time() - start:.1f}s", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--n", type=int, default=4096)
    train(parser.parse_args())
