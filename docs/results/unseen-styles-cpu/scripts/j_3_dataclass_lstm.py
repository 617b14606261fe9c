"""A @dataclass holds the whole config (edit the defaults to change a run; no argparse), as in many small research
repos. Variable-length token sequences, padded per batch by a collate_fn with pad_sequence, into an LSTM classifier."""
import random
import time
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence
from torch.utils.data import DataLoader, Dataset

PAD = 0


@dataclass
class Config:
    vocab_size: int = 200
    min_len: int = 10
    max_len: int = 80
    n_train: int = 3000
    batch_size: int = 32
    num_workers: int = 0
    embed_dim: int = 64
    hidden_dim: int = 96
    lr: float = 3e-3
    epochs: int = 3
    seed: int = 17


class ToySentiment(Dataset):
    """Sentences are generated as text, then 'tokenised' with a hand-written subword splitter: label 1 when
    'good'-words outnumber 'bad'-words. The splitting is the slow, per-item part."""

    GOOD = ["great", "fine", "superb", "lovely", "nice"]
    BAD = ["awful", "poor", "dreadful", "bland", "weak"]

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.filler = [f"tok{i}" for i in range(cfg.vocab_size - 20)]
        self.vocab = {w: i + 1 for i, w in enumerate(self.GOOD + self.BAD + self.filler)}

    def __len__(self):
        return self.cfg.n_train

    def _tokenise(self, text):
        ids = []
        for word in text.split():
            piece = word
            while piece:                       # greedy longest-match, one character at a time
                for end in range(len(piece), 0, -1):
                    if piece[:end] in self.vocab:
                        ids.append(self.vocab[piece[:end]])
                        piece = piece[end:]
                        break
                else:
                    piece = piece[1:]
        return ids

    def __getitem__(self, idx):
        rng = random.Random(self.cfg.seed * 100003 + idx)
        n = rng.randint(self.cfg.min_len, self.cfg.max_len)
        words = [rng.choice(self.filler) for _ in range(n)]
        n_good, n_bad = rng.randint(0, 6), rng.randint(0, 6)
        for w in rng.choices(self.GOOD, k=n_good) + rng.choices(self.BAD, k=n_bad):
            words.insert(rng.randrange(len(words) + 1), w)
        text = " ".join(words)
        for _ in range(120):                   # normalisation passes (a stand-in for a real text pipeline)
            text = " ".join(w.strip(".,!?").lower() for w in text.split())
        ids = torch.tensor(self._tokenise(text), dtype=torch.long)
        return ids, int(n_good > n_bad)


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    return padded, lengths, torch.tensor(labels)


class LSTMClassifier(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size + 1, cfg.embed_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(cfg.embed_dim, cfg.hidden_dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * cfg.hidden_dim, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.out(torch.cat([h[-2], h[-1]], dim=1))


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    total_loss, total_correct, total = 0.0, 0, 0
    for tokens, lengths, labels in loader:
        optimizer.zero_grad()
        logits = model(tokens, lengths)
        loss = criterion(logits, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        total_loss += loss.item() * labels.size(0)
        total_correct += (logits.argmax(1) == labels).sum().item()
        total += labels.size(0)
    return total_loss / total, total_correct / total, total


def main(cfg: Config):
    print(asdict(cfg), flush=True)
    torch.manual_seed(cfg.seed)
    train_set = ToySentiment(cfg)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True,
                              collate_fn=pad_collate, num_workers=cfg.num_workers)
    model = LSTMClassifier(cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(cfg.epochs):
        start = time.time()
        loss, acc, n = train_epoch(model, train_loader, optimizer, criterion)
        print(f"Epoch {epoch:02d} | loss {loss:.4f} | acc {acc:.3f} | {n} samples | {time.time() - start:.1f}s",
              flush=True)


if __name__ == "__main__":
    main(Config())
