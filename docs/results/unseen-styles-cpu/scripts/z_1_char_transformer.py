"""Char-level transformer text classifier: the tokenizer lives in the Dataset (string -> ids with a
vocab built in __init__), a lambda collate pads and builds attention (key padding) masks."""
import argparse
import random
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

ALPHABET = "abcdefghijklmnopqrstuvwxyz .,!?"
POS_WORDS = ["good", "great", "fine", "happy", "nice"]
NEG_WORDS = ["bad", "awful", "sad", "poor", "ugly"]


class CharTokenizer:
    def __init__(self, alphabet):
        self.stoi = {c: i + 2 for i, c in enumerate(alphabet)}  # 0 pad, 1 unk

    def encode(self, text, max_len):
        ids = [self.stoi.get(c, 1) for c in text.lower()][:max_len]
        return ids


class ReviewDataset(Dataset):
    def __init__(self, n=1600, max_len=160, seed=0):
        rnd = random.Random(seed)
        self.items = []
        for _ in range(n):
            label = rnd.randint(0, 1)
            words = [rnd.choice(ALPHABET[:26]) * rnd.randint(1, 6) for _ in range(rnd.randint(15, 35))]
            for _ in range(3):
                words.insert(rnd.randrange(len(words)), rnd.choice(POS_WORDS if label else NEG_WORDS))
            self.items.append((" ".join(words), label))
        self.tok = CharTokenizer(ALPHABET)
        self.max_len = max_len

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        text, label = self.items[i]
        # "normalisation" pass that costs real CPU: char n-gram hashing features, as some pipelines do
        feats = np.zeros(64, dtype=np.float32)
        for _ in range(6):
            for k in range(len(text) - 2):
                feats[hash(text[k:k + 3]) % 64] += 1.0
        ids = self.tok.encode(text, self.max_len)
        return torch.tensor(ids, dtype=torch.long), torch.from_numpy(feats / (feats.sum() + 1)), label


def pad_batch(batch):
    seqs, feats, labels = zip(*batch)
    L = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), L, dtype=torch.long)
    for j, s in enumerate(seqs):
        ids[j, :len(s)] = s
    return ids, ids.eq(0), torch.stack(feats), torch.tensor(labels)


class CharTransformer(nn.Module):
    def __init__(self, vocab=40, d=64, max_len=160):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d))
        layer = nn.TransformerEncoderLayer(d, 4, 128, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d + 64, 2)

    def forward(self, ids, pad_mask, feats):
        h = self.emb(ids) + self.pos[:, :ids.size(1)]
        h = self.enc(h, src_key_padding_mask=pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        pooled = (h * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(torch.cat([pooled, feats], 1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(0)
    ds = ReviewDataset()
    train_loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                              collate_fn=lambda b: pad_batch(b))
    model = CharTransformer()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    crit = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        tot, correct, n = 0.0, 0, 0
        for ids, mask, feats, y in train_loader:
            logits = model(ids, mask, feats)
            loss = crit(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += loss.item() * y.size(0)
            correct += (logits.argmax(1) == y).sum().item()
            n += y.size(0)
        print(f"epoch {epoch + 1}: loss {tot / n:.4f} acc {correct / n:.3f} batches {len(train_loader)}")
