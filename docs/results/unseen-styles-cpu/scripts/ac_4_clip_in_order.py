"""A CLIP-style contrastive model on synthetic image/caption pairs: an image tower and a text tower, a learnable
logit_scale clamped at 100, the symmetric cross-entropy over the in-batch similarity matrix, AdamW with no weight
decay on gains/biases/logit_scale, a per-step cosine schedule with warm-up, and a callable collator that tokenizes
and pads captions. The loader is built with in_order=False and persistent workers. Zero-shot accuracy on a held-out
set is printed after each epoch."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

COLOURS = {"red": (1, 0, 0), "green": (0, 1, 0), "blue": (0, 0, 1), "yellow": (1, 1, 0)}
SHAPES = ("square", "circle", "cross")
SIZES = ("small", "large")
SIDES = ("left", "right")


class ShapeCaptions(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.items = [(rng.choice(list(COLOURS)), rng.choice(SHAPES), rng.choice(SIZES), rng.choice(SIDES),
                       int(rng.integers(0, 2**31))) for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        colour, shape, size, side, seed = self.items[i]
        rng = np.random.default_rng(seed)
        r = 5 if size == "small" else 10
        cx = int(rng.integers(r, 16)) + (16 if side == "right" else 0)
        cy = int(rng.integers(r, 32 - r))
        yy, xx = np.mgrid[0:32, 0:32]
        if shape == "square":
            m = (abs(yy - cy) <= r) & (abs(xx - cx) <= r)
        elif shape == "circle":
            m = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        else:
            m = ((abs(yy - cy) <= r) & (abs(xx - cx) <= 2)) | ((abs(xx - cx) <= r) & (abs(yy - cy) <= 2))
        img = rng.uniform(0, 0.3, (3, 32, 32)).astype(np.float32)
        img[:, m] = np.array(COLOURS[colour], np.float32)[:, None] * rng.uniform(0.7, 1.0)
        for _ in range(2):
            img = 0.6 * img + 0.1 * (np.roll(img, 1, 1) + np.roll(img, -1, 1) + np.roll(img, 1, 2) + np.roll(img, -1, 2))
        caption = f"a {size} {colour} {shape} on the {side}"
        return torch.from_numpy(img), caption


class Tokenizer:
    def __init__(self):
        words = ["<pad>", "<bos>", "a", "on", "the"] + list(COLOURS) + list(SHAPES) + list(SIZES) + list(SIDES)
        self.vocab = {w: i for i, w in enumerate(words)}

    def __call__(self, text):
        return [self.vocab["<bos>"]] + [self.vocab[w] for w in text.split()]


class CaptionCollator:
    def __init__(self, tokenizer, max_len=16):
        self.tok, self.max_len = tokenizer, max_len

    def __call__(self, batch):
        images, captions = zip(*batch)
        ids = [self.tok(c)[: self.max_len] for c in captions]
        longest = max(len(x) for x in ids)
        input_ids = torch.zeros(len(ids), longest, dtype=torch.long)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = torch.tensor(x)
        return {"pixel_values": torch.stack(images), "input_ids": input_ids, "attention_mask": input_ids != 0}


class CLIP(nn.Module):
    def __init__(self, vocab, dim=128):
        super().__init__()
        self.visual = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
                                    nn.Conv2d(32, 64, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
                                    nn.Conv2d(64, 128, 3, padding=1), nn.GELU(), nn.AdaptiveAvgPool2d(1),
                                    nn.Flatten(), nn.Linear(128, dim))
        self.token_embedding = nn.Embedding(vocab, dim)
        self.positional = nn.Parameter(torch.randn(16, dim) * 0.01)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, 2)
        self.ln_final = nn.LayerNorm(dim)
        self.text_projection = nn.Linear(dim, dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def encode_text(self, input_ids, attention_mask):
        x = self.token_embedding(input_ids) + self.positional[: input_ids.shape[1]]
        x = self.ln_final(self.transformer(x, src_key_padding_mask=~attention_mask))
        x = (x * attention_mask[..., None]).sum(1) / attention_mask.sum(1, keepdim=True)
        return self.text_projection(x)

    def forward(self, pixel_values, input_ids, attention_mask):
        img = F.normalize(self.visual(pixel_values), dim=-1)
        txt = F.normalize(self.encode_text(input_ids, attention_mask), dim=-1)
        return img, txt, self.logit_scale.exp()


def clip_loss(img, txt, scale):
    logits = scale * img @ txt.t()
    labels = torch.arange(len(img))
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


@torch.no_grad()
def zero_shot(model, dataset, collate, n=300):
    classes = [f"a {s} {c} {sh} on the {d}" for s in SIZES for c in COLOURS for sh in SHAPES for d in SIDES]
    text = collate([(torch.zeros(3, 32, 32), c) for c in classes])
    txt = F.normalize(model.encode_text(text["input_ids"], text["attention_mask"]), dim=-1)
    batch = collate([dataset[i] for i in range(n)])
    img = F.normalize(model.visual(batch["pixel_values"]), dim=-1)
    truth = torch.tensor([classes.index(dataset[i][1]) for i in range(n)])
    return ((img @ txt.t()).argmax(1) == truth).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()

    torch.manual_seed(0)
    collate = CaptionCollator(Tokenizer())
    train_set, test_set = ShapeCaptions(4096, seed=0), ShapeCaptions(300, seed=1)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True, collate_fn=collate,
                        num_workers=args.workers, persistent_workers=args.workers > 0, in_order=False)
    model = CLIP(vocab=len(collate.tok.vocab))
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "positional" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "positional" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.98), eps=1e-6)
    total = args.epochs * len(loader)
    schedule = lambda s: (s + 1) / args.warmup if s < args.warmup else 0.5 * (1 + math.cos(math.pi * s / total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)

    step = 0
    for epoch in range(args.epochs):
        model.train()
        running = []
        for batch in loader:
            img, txt, scale = model(**batch)
            loss = clip_loss(img, txt, scale)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            running.append(loss.item())
            step += 1
        model.eval()
        acc = zero_shot(model, test_set, collate)
        print(f"epoch {epoch}: {len(running)} batches, loss {np.mean(running):.4f}, "
              f"logit_scale {model.logit_scale.exp().item():.1f}, zero-shot acc {acc:.3f}", flush=True)


if __name__ == "__main__":
    main()
