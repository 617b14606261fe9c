"""Small tabular data, many short epochs, as in the many "PyTorch for tabular data" tutorials and course notebooks:
a pandas DataFrame (synthetic patient records: numeric columns plus one-hot categories, built in the script) split
with `df.sample(frac=0.8)`, a `TabularDataset(Dataset)` whose __getitem__ reads one row with `self.df.iloc[idx]`
and turns `row[self.feature_cols].values` into a float tensor, train and validation DataLoaders with the copied
boilerplate `num_workers=2` (not persistent), up to 150 epochs of ~16 batches each, ReduceLROnPlateau on the
validation loss, early stopping with patience and a deep copy of the best state_dict restored at the end."""
import argparse
import copy
import time

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def make_dataframe(n=1300, seed=7):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(25, 80, n),
        "bmi": rng.normal(27, 5, n).round(1),
        "bp_sys": rng.normal(130, 18, n).round(),
        "cholesterol": rng.normal(210, 40, n).round(),
        "glucose": rng.normal(100, 25, n).round(),
        "smoker": rng.integers(0, 2, n),
        "region": rng.choice(["north", "south", "east", "west"], n),
    })
    risk = (0.04 * (df.age - 50) + 0.08 * (df.bmi - 27) + 0.02 * (df.bp_sys - 130) + 0.01 * (df.cholesterol - 210)
            + 0.015 * (df.glucose - 100) + 0.8 * df.smoker + (df.region == "south") * 0.5
            + rng.normal(0, 1.0, n))
    df["target"] = (risk > 0.3).astype(int)
    df = pd.get_dummies(df, columns=["region"], dtype=float)
    return df


class TabularDataset(Dataset):
    def __init__(self, df, feature_cols, target_col, mean=None, std=None):
        self.df = df.reset_index(drop=True)
        self.feature_cols = feature_cols
        self.target_col = target_col
        self.mean = mean
        self.std = std

    def __len__(self):
        return len(self.df)

    def __getitem__(self, idx):
        row = self.df.iloc[idx]
        x = row[self.feature_cols].values.astype(np.float32)
        if self.mean is not None:
            x = (x - self.mean) / self.std
        y = np.float32(row[self.target_col])
        return torch.tensor(x), torch.tensor(y)


class MLP(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Dropout(0.2),
                                 nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(1)


def train(model, loader, criterion, optimizer):
    model.train()
    running_loss = 0.0
    for inputs, labels in loader:
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item() * inputs.size(0)
    return running_loss / len(loader.dataset)


def evaluate(model, loader, criterion):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for inputs, labels in loader:
            outputs = model(inputs)
            total += criterion(outputs, labels).item() * inputs.size(0)
            correct += ((outputs > 0).float() == labels).sum().item()
            n += inputs.size(0)
    return total / n, correct / n


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--patience", type=int, default=25)
    args = parser.parse_args()
    torch.manual_seed(0)

    df = make_dataframe()
    train_df = df.sample(frac=0.8, random_state=42)
    val_df = df.drop(train_df.index)
    feature_cols = [c for c in df.columns if c != "target"]
    mean = train_df[feature_cols].mean().values.astype(np.float32)
    std = train_df[feature_cols].std().values.astype(np.float32)

    train_dataset = TabularDataset(train_df, feature_cols, "target", mean, std)
    val_dataset = TabularDataset(val_df, feature_cols, "target", mean, std)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=2)
    val_loader = DataLoader(val_dataset, batch_size=args.batch_size, shuffle=False, num_workers=2)

    model = MLP(len(feature_cols))
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=5)

    best_loss, best_state, bad_epochs = float("inf"), None, 0
    start = time.time()
    for epoch in range(args.epochs):
        train_loss = train(model, train_loader, criterion, optimizer)
        val_loss, val_acc = evaluate(model, val_loader, criterion)
        scheduler.step(val_loss)
        if val_loss < best_loss - 1e-4:
            best_loss, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
        if epoch % 10 == 0 or bad_epochs > args.patience:
            print(f"Epoch {epoch + 1}/{args.epochs} | train loss {train_loss:.4f} | val loss {val_loss:.4f} | "
                  f"val acc {val_acc:.3f} | lr {optimizer.param_groups[0]['lr']:.2e} | {time.time() - start:.1f}s",
                  flush=True)
        if bad_epochs > args.patience:
            print(f"Early stopping at epoch {epoch + 1}")
            break
    model.load_state_dict(best_state)
    val_loss, val_acc = evaluate(model, val_loader, criterion)
    print(f"best val loss {val_loss:.4f}, val acc {val_acc:.3f}, {len(train_loader)} batches per epoch, "
          f"{epoch + 1} epochs, {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
