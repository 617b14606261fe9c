"""Text classifier in the HuggingFace style: a dict-of-lists dataset of raw texts, tokenized per item, batched by a
callable collator class (like transformers.DataCollatorWithPadding) that pads and returns a dict of tensors."""
import argparse
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

WORDS = [f"w{i}" for i in range(3000)]


def make_raw_dataset(n, seed):
    """Synthetic 'datasets.Dataset.to_dict()'-style columns: {'text': [...], 'label': [...]}."""
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        length = rng.randint(16, 160)
        label = rng.randint(0, 3)
        words = [WORDS[(rng.randint(0, 749) + 750 * label) if rng.random() < 0.3 else rng.randint(0, 2999)]
                 for _ in range(length)]
        texts.append(" ".join(words))
        labels.append(label)
    return {"text": texts, "label": labels}


class SimpleTokenizer:
    def __init__(self, vocab, max_length=128):
        self.vocab = {w: i + 2 for i, w in enumerate(vocab)}  # 0 = pad, 1 = unk
        self.max_length = max_length
        self.pad_token_id = 0

    def __call__(self, text):
        ids = [self.vocab.get(tok.lower().strip(".,!?"), 1) for tok in text.split()]
        ids = ids[: self.max_length]
        # a little extra per-item work, as real tokenizers do (normalisation, offsets)
        offsets, pos = [], 0
        for tok in text.split()[: self.max_length]:
            offsets.append((pos, pos + len(tok)))
            pos += len(tok) + 1
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "offsets": offsets}


class TextDataset(Dataset):
    def __init__(self, columns, tokenizer):
        self.columns = columns
        self.tokenizer = tokenizer

    def __len__(self):
        return len(self.columns["label"])

    def __getitem__(self, idx):
        enc = self.tokenizer(self.columns["text"][idx])
        enc.pop("offsets")
        enc["labels"] = self.columns["label"][idx]
        return enc


class DataCollatorWithPadding:
    """Pads every feature to the longest in the batch; returns a dict of tensors."""

    def __init__(self, pad_token_id=0, pad_to_multiple_of=8):
        self.pad_token_id = pad_token_id
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, features):
        max_len = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            max_len = (max_len + self.pad_to_multiple_of - 1) // self.pad_to_multiple_of * self.pad_to_multiple_of
        input_ids, attention_mask = [], []
        for f in features:
            pad = max_len - len(f["input_ids"])
            input_ids.append(f["input_ids"] + [self.pad_token_id] * pad)
            attention_mask.append(f["attention_mask"] + [0] * pad)
        return {
            "input_ids": torch.tensor(input_ids, dtype=torch.long),
            "attention_mask": torch.tensor(attention_mask, dtype=torch.long),
            "labels": torch.tensor([f["labels"] for f in features], dtype=torch.long),
        }


class GRUClassifier(nn.Module):
    def __init__(self, vocab_size, dim=64, hidden=64, num_labels=4):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.gru = nn.GRU(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids)
        lengths = attention_mask.sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return self.head(h[-1])


def train(args):
    torch.manual_seed(args.seed)
    tokenizer = SimpleTokenizer(WORDS, max_length=args.max_length)
    train_ds = TextDataset(make_raw_dataset(args.train_size, args.seed), tokenizer)
    collator = DataCollatorWithPadding(pad_token_id=tokenizer.pad_token_id)
    train_dataloader = DataLoader(train_ds, batch_size=args.per_device_train_batch_size, shuffle=True,
                                  collate_fn=collator, num_workers=args.dataloader_num_workers)
    model = GRUClassifier(len(WORDS) + 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    loss_fct = nn.CrossEntropyLoss()

    for epoch in range(args.num_train_epochs):
        model.train()
        total_loss, nb = 0.0, 0
        for batch in train_dataloader:
            logits = model(batch["input_ids"], batch["attention_mask"])
            loss = loss_fct(logits, batch["labels"])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total_loss += loss.item()
            nb += 1
        print(f"epoch {epoch} loss {total_loss / nb:.4f} batches {nb}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num_train_epochs", type=int, default=3)
    p.add_argument("--per_device_train_batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=3e-3)
    p.add_argument("--dataloader_num_workers", type=int, default=2)
    p.add_argument("--train_size", type=int, default=4000)
    p.add_argument("--max_length", type=int, default=128)
    p.add_argument("--seed", type=int, default=42)
    train(p.parse_args())


if __name__ == "__main__":
    main()
