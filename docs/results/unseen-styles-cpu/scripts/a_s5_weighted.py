"""random_split + WeightedRandomSampler, validation after every epoch."""
import argparse, time
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader, random_split, WeightedRandomSampler


class ImbalancedDataset(Dataset):
    def __init__(self, n=4000, dim=64, seed=0):
        g = np.random.default_rng(seed)
        self.labels = (g.random(n) < 0.15).astype(np.int64)  # 15% positives
        self.feats = g.standard_normal((n, dim)).astype(np.float32) + self.labels[:, None].astype(np.float32) * 0.5

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.feats[i]
        # per-sample augmentation: random projection noise, done in numpy
        noise = np.random.standard_normal((64, 64)).astype(np.float32) @ x * 0.01
        for _ in range(10):
            x = np.tanh(x + noise * 0.1)
        return torch.from_numpy(np.ascontiguousarray(x)), torch.tensor(self.labels[i])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--num_workers", type=int, default=1)
    args = ap.parse_args()

    torch.manual_seed(42)
    full = ImbalancedDataset()
    n_val = int(0.2 * len(full))
    train_ds, val_ds = random_split(full, [len(full) - n_val, n_val],
                                    generator=torch.Generator().manual_seed(42))
    train_labels = full.labels[train_ds.indices]
    class_counts = np.bincount(train_labels)
    weights = 1.0 / class_counts[train_labels]
    sampler = WeightedRandomSampler(torch.as_tensor(weights, dtype=torch.double),
                                    num_samples=len(train_ds), replacement=True)

    train_loader = DataLoader(train_ds, batch_size=args.batch_size, sampler=sampler,
                              num_workers=args.num_workers, pin_memory=False)
    val_loader = DataLoader(val_ds, batch_size=128, shuffle=False, num_workers=args.num_workers)

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 2))
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        n = 0
        for x, y in train_loader:
            optim.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            optim.step()
            n += 1
        train_time = time.time() - t0
        model.eval()
        correct = total = vb = 0
        with torch.no_grad():
            for x, y in val_loader:
                pred = model(x).argmax(1)
                correct += (pred == y).sum().item()
                total += y.numel()
                vb += 1
        print(f"epoch {epoch}: train_batches={n} train_time={train_time:.2f}s "
              f"val_batches={vb} val_acc={correct / total:.3f}")


if __name__ == "__main__":
    main()
