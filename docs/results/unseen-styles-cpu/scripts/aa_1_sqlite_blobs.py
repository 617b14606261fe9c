"""Samples kept as BLOBs in a SQLite file, the "one small database instead of a million files" layout. The
connection is opened lazily on first __getitem__ so every worker process gets its own (sqlite3 connections must not
cross a fork), and the file sharing strategy is switched to file_system, as many repos do after hitting "too many
open files". The database is built in a temporary directory the first time the script runs."""
import argparse
import os
import sqlite3
import tempfile
import time

import numpy as np
import torch
import torch.multiprocessing
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.multiprocessing.set_sharing_strategy("file_system")

DB_PATH = os.path.join(tempfile.gettempdir(), "aa1_patches.sqlite")
PATCH = 32


def build_db(path, n_rows, seed=0):
    if os.path.exists(path):
        with sqlite3.connect(path) as con:
            (count,) = con.execute("SELECT COUNT(*) FROM patches").fetchone()
        if count == n_rows:
            return
        os.remove(path)
    rng = np.random.default_rng(seed)
    con = sqlite3.connect(path + ".part")
    con.execute("CREATE TABLE patches (id INTEGER PRIMARY KEY, label INTEGER, pixels BLOB)")
    rows = []
    for i in range(n_rows):
        label = int(rng.integers(0, 5))
        img = rng.integers(0, 256, (3, PATCH, PATCH), dtype=np.uint8)
        img[label % 3, 8:24, 8:24] //= 4  # a dark square on one channel tells the class apart
        if label >= 3:
            img[:, :, :PATCH // 2] = img[:, :, :PATCH // 2] // 2 + 128
        rows.append((i, label, img.tobytes()))
    con.executemany("INSERT INTO patches VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()
    os.replace(path + ".part", path)


class SqlitePatches(Dataset):
    def __init__(self, path):
        self.path = path
        self.con = None
        with sqlite3.connect(path) as con:
            self.ids = [r[0] for r in con.execute("SELECT id FROM patches ORDER BY id")]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        if self.con is None:
            self.con = sqlite3.connect(self.path, check_same_thread=False)
        label, blob = self.con.execute(
            "SELECT label, pixels FROM patches WHERE id = ?", (self.ids[index],)).fetchone()
        img = np.frombuffer(blob, dtype=np.uint8).reshape(3, PATCH, PATCH).astype(np.float32) / 255.0
        if np.random.rand() < 0.5:
            img = img[:, :, ::-1]
        # per-channel standardisation plus a 3x3 box blur, written the slow numpy way
        img = (img - img.mean(axis=(1, 2), keepdims=True)) / (img.std(axis=(1, 2), keepdims=True) + 1e-5)
        padded = np.pad(img, ((0, 0), (1, 1), (1, 1)), mode="reflect")
        blurred = sum(padded[:, dy:dy + PATCH, dx:dx + PATCH] for dy in range(3) for dx in range(3)) / 9.0
        return torch.from_numpy(np.ascontiguousarray(blurred, dtype=np.float32)), label


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 5),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--bs", type=int, default=50)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    np.random.seed(0)
    torch.manual_seed(0)
    build_db(DB_PATH, args.rows)
    ds = SqlitePatches(DB_PATH)
    dl = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    net = make_model()
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    crit = nn.CrossEntropyLoss()
    for ep in range(args.epochs):
        net.train()
        tic, seen, loss_sum, steps = time.time(), 0, 0.0, 0
        for imgs, labels in dl:
            logits = net(imgs)
            loss = crit(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            seen += labels.numel()
            steps += 1
        print(f"[{ep + 1}/{args.epochs}] loss={loss_sum / steps:.4f} steps={steps} samples={seen} "
              f"time={time.time() - tic:.1f}s")


if __name__ == "__main__":
    main()
