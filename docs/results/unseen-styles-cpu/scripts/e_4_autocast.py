"""CPU mixed precision (torch.autocast bf16) with grad clipping and an EMA copy of the model updated every step."""
import argparse
import copy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class TokenSeqs(Dataset):
    """Synthetic token sequences; the label is whether token 7 appears more than token 3.
    Each item is 'tokenised' on the fly: a random walk over a vocabulary, then a bag-of-ngrams hash."""

    def __init__(self, n, seq_len=128, vocab=64, seed=0):
        self.n, self.seq_len, self.vocab, self.seed = n, seq_len, vocab, seed

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + idx)
        steps = torch.randint(-3, 4, (self.seq_len,), generator=g)
        toks = torch.remainder(torch.cumsum(steps, 0), self.vocab)
        feats = torch.zeros(256)
        for j in range(self.seq_len - 1):  # bigram hashing, one pair at a time
            feats[(int(toks[j]) * 31 + int(toks[j + 1])) % 256] += 1.0
        label = int((toks == 7).sum() > (toks == 3).sum())
        return feats / self.seq_len, label


class MLP(nn.Module):
    def __init__(self, d_in=256, hidden=512, n_cls=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.LayerNorm(hidden),
                                 nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, n_cls))

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def ema_update(ema, model, decay):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.mul_(decay).add_(pm.detach(), alpha=1 - decay)
    for be, bm in zip(ema.buffers(), model.buffers()):
        be.copy_(bm)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--ema-decay", type=float, default=0.99)
    parser.add_argument("--train-size", type=int, default=8192)
    args = parser.parse_args()

    torch.manual_seed(1234)
    train_ds = TokenSeqs(args.train_size)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, persistent_workers=args.num_workers > 0)
    model = MLP()
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        total_loss, total_norm, n = 0.0, 0.0, 0
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                output = model(data)
                loss = criterion(output, target)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            ema_update(ema, model, args.ema_decay)
            total_loss += loss.item()
            total_norm += grad_norm.item()
            n += 1
        print(f"epoch {epoch} loss {total_loss / n:.4f} batches {n} grad_norm {total_norm / n:.3f}")


if __name__ == "__main__":
    main()
