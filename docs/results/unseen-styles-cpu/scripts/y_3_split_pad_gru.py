"""Text classifier: random_split into train/val, collate_fn pads variable-length sequences with
pad_sequence + pack_padded_sequence into a GRU. Validation each epoch. Loader via a small helper
get_loaders(cfg) returning both loaders (train with 1 worker)."""
import argparse
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence
from torch.utils.data import DataLoader, Dataset, random_split

VOCAB = 100


class SyntheticReviews(Dataset):
    def __init__(self, n=3600):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        length = int(torch.randint(10, 60, (1,), generator=g))
        toks = torch.randint(1, VOCAB, (length,), generator=g)
        # "tokenisation": python-level character work
        s = ",".join(str(int(t)) for t in toks)
        for _ in range(150):
            s = ",".join(reversed(s.split(",")))
        toks = torch.tensor([int(t) for t in s.split(",")])
        label = int((toks < 20).sum() > (toks > 80).sum())
        return toks, label


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True, padding_value=0), lengths, torch.tensor(labels)


class GRUClassifier(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, dim, padding_idx=0)
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.fc = nn.Linear(dim, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.emb(x), lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return self.fc(h[-1])


def get_loaders(cfg):
    full = SyntheticReviews()
    n_val = len(full) // 6
    train_ds, val_ds = random_split(full, [len(full) - n_val, n_val], generator=torch.Generator().manual_seed(42))
    train = DataLoader(train_ds, batch_size=cfg.batch_size, shuffle=True, collate_fn=pad_collate, num_workers=1)
    val = DataLoader(val_ds, batch_size=cfg.batch_size, collate_fn=pad_collate)
    return train, val


def run(cfg):
    torch.manual_seed(0)
    train_loader, val_loader = get_loaders(cfg)
    model = GRUClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()
    for epoch in range(cfg.epochs):
        model.train()
        tot, nb = 0.0, 0
        for x, lengths, y in train_loader:
            opt.zero_grad()
            loss = lossf(model(x, lengths), y)
            loss.backward()
            opt.step()
            tot += loss.item()
            nb += 1
        model.eval()
        correct = n = 0
        with torch.no_grad():
            for x, lengths, y in val_loader:
                correct += (model(x, lengths).argmax(1) == y).sum().item()
                n += len(y)
        print(f"epoch {epoch + 1}/{cfg.epochs} batches={nb} train_loss={tot / nb:.4f} val_acc={correct / n:.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch_size", type=int, default=32)
    run(ap.parse_args())
