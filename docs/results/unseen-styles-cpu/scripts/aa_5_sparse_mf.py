"""Recommender-style matrix factorisation (the NCF / "collaborative filtering in PyTorch" tutorials): a Dataset of
(user, item, rating) triples served one triple per __getitem__, big batches, nn.Embedding(sparse=True) tables
trained with SparseAdam while the dense biases and MLP use Adam -- two optimizers stepped every batch. The loader is
seeded through generator=torch.Generator().manual_seed(...) and workers come from --num_workers (default 0, as the
tutorials leave it)."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def synth_ratings(n_users, n_items, n_ratings, rank=8, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.normal(0, 1, (n_users, rank))
    V = rng.normal(0, 1, (n_items, rank))
    users = rng.integers(0, n_users, n_ratings)
    items = rng.integers(0, n_items, n_ratings)
    raw = (U[users] * V[items]).sum(1) / np.sqrt(rank)
    ratings = np.clip(np.round(3 + 1.2 * raw + rng.normal(0, 0.3, n_ratings)), 1, 5)
    return users, items, ratings.astype(np.float32)


class RatingsDataset(Dataset):
    def __init__(self, users, items, ratings):
        self.users, self.items, self.ratings = users, items, ratings

    def __len__(self):
        return len(self.ratings)

    def __getitem__(self, idx):
        return {
            "user": torch.tensor(self.users[idx], dtype=torch.long),
            "item": torch.tensor(self.items[idx], dtype=torch.long),
            "rating": torch.tensor(self.ratings[idx], dtype=torch.float32),
        }


class MF(nn.Module):
    def __init__(self, n_users, n_items, dim=32):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim, sparse=True)
        self.item_emb = nn.Embedding(n_items, dim, sparse=True)
        self.user_bias = nn.Parameter(torch.zeros(n_users))
        self.item_bias = nn.Parameter(torch.zeros(n_items))
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 64), nn.ReLU(), nn.Linear(64, 1))
        nn.init.normal_(self.user_emb.weight, std=0.1)
        nn.init.normal_(self.item_emb.weight, std=0.1)

    def forward(self, user, item):
        u, v = self.user_emb(user), self.item_emb(item)
        dot = (u * v).sum(-1)
        return 3.0 + dot + self.mlp(torch.cat([u, v], -1)).squeeze(-1) + self.user_bias[user] + self.item_bias[item]


def main():
    parser = argparse.ArgumentParser(description="Matrix factorisation with sparse embeddings")
    parser.add_argument("--n_users", type=int, default=2000)
    parser.add_argument("--n_items", type=int, default=1500)
    parser.add_argument("--n_ratings", type=int, default=120000)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    dataset = RatingsDataset(*synth_ratings(args.n_users, args.n_items, args.n_ratings))
    train_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
                              generator=torch.Generator().manual_seed(args.seed))

    model = MF(args.n_users, args.n_items)
    sparse_params = list(model.user_emb.parameters()) + list(model.item_emb.parameters())
    dense_params = [p for n, p in model.named_parameters() if not n.endswith("_emb.weight")]
    sparse_opt = torch.optim.SparseAdam(sparse_params, lr=1e-2)
    dense_opt = torch.optim.Adam(dense_params, lr=1e-3)
    criterion = nn.MSELoss()

    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.time()
        total, n, steps = 0.0, 0, 0
        for batch in train_loader:
            pred = model(batch["user"], batch["item"])
            loss = criterion(pred, batch["rating"])
            sparse_opt.zero_grad()
            dense_opt.zero_grad()
            loss.backward()
            sparse_opt.step()
            dense_opt.step()
            total += loss.item() * len(pred)
            n += len(pred)
            steps += 1
        print(f"Epoch {epoch:02d} | RMSE {np.sqrt(total / n):.4f} | {steps} batches | "
              f"{time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
