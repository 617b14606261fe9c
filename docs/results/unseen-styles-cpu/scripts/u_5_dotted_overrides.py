"""Nested config with dotted command-line overrides (Hydra/OmegaConf habit without the library): a module-level
`CONFIG = {"data": {"workers": 0, ...}, "optim": {...}, "train": {...}}`, overridden by `--set data.workers=2`
(repeatable), values parsed with `ast.literal_eval`. Variable-length token sequences are batched by
`BatchSampler(SequentialSampler(ds), batch_size, drop_last=True)` passed as `batch_sampler=` with a padding
`collate_fn` (pad_sequence + lengths), into a GRU with pack_padded_sequence.

A correct report: the loop is train()'s `for step, (tokens, lengths, labels) in enumerate(loader):`; each of the
3 epochs keeps 1000 // 20 = 50 batches (drop_last); the count comes from CONFIG["data"]["workers"] (edit: that key,
or `--set data.workers=N`); the DataLoader line reads `cfg["data"]["workers"]`.
"""
import argparse
import ast
import copy
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler

CONFIG = {
    "data": {"n": 1000, "batch_size": 20, "workers": 0, "vocab": 500},
    "optim": {"lr": 3e-3, "wd": 0.0},
    "train": {"epochs": 3, "seed": 0},
}


def apply_overrides(cfg, items):
    cfg = copy.deepcopy(cfg)
    for item in items:
        key, value = item.split("=", 1)
        *parents, leaf = key.split(".")
        node = cfg
        for p in parents:
            node = node[p]
        node[leaf] = ast.literal_eval(value)
    return cfg


class Sentences(Dataset):
    def __init__(self, n, vocab):
        g = np.random.default_rng(0)
        self.lengths = g.integers(10, 60, n)
        self.labels = g.integers(0, 3, n)
        self.vocab = vocab

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        y = int(self.labels[i])
        ids = g.integers(1, self.vocab, int(self.lengths[i]))
        ids[::3] = 1 + y * 50 + ids[::3] % 50  # class signal
        # "tokenizer" work: a few passes of pure-python normalisation
        toks = [int(t) for t in ids]
        for _ in range(30):
            toks = [(t * 31 + 7) % self.vocab or 1 if t > 400 else t for t in toks]
        time.sleep(0.002)
        return torch.tensor(toks), y


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True), lengths, torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, 64, padding_idx=0)
        self.rnn = nn.GRU(64, 96, batch_first=True)
        self.out = nn.Linear(96, 3)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.emb(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, h = self.rnn(packed)
        return self.out(h[-1])


def train(cfg):
    torch.manual_seed(cfg["train"]["seed"])
    ds = Sentences(cfg["data"]["n"], cfg["data"]["vocab"])
    sampler = BatchSampler(SequentialSampler(ds), cfg["data"]["batch_size"], drop_last=True)
    loader = DataLoader(ds, batch_sampler=sampler, collate_fn=pad_collate, num_workers=cfg["data"]["workers"])
    model = Classifier(cfg["data"]["vocab"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["optim"]["lr"], weight_decay=cfg["optim"]["wd"])
    for epoch in range(cfg["train"]["epochs"]):
        t0, tot = time.time(), 0.0
        for step, (tokens, lengths, labels) in enumerate(loader):
            loss = F.cross_entropy(model(tokens, lengths), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        print(f"epoch {epoch} loss {tot / (step + 1):.4f} batches {step + 1} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override, e.g. data.workers=2")
    train(apply_overrides(CONFIG, parser.parse_args().set))
