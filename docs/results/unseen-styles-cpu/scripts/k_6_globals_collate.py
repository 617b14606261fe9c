"""nanoGPT-style script: configuration as module globals, overridden from the command line as `--key=value`
through globals(); the training loop runs at module level (no main()), with a hand-written cosine LR schedule.
The Dataset returns raw strings and all the featurisation happens in the collate_fn (hashing character n-grams
of each string), as text pipelines that tokenise in collate do."""
import math
import sys
import time
import zlib
from ast import literal_eval

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

# -----------------------------------------------------------------------------
# default config values
batch_size = 64
num_workers = 1
max_iters = 480          # 80 batches an epoch -> 6 epochs
learning_rate = 3e-3
min_lr = 3e-4
warmup_iters = 20
n_hash = 1024
n_samples = 5120
seed = 1337
# -----------------------------------------------------------------------------
for arg in sys.argv[1:]:
    assert arg.startswith("--") and "=" in arg, f"expected --key=value, got {arg}"
    key, val = arg[2:].split("=", 1)
    assert key in globals(), f"unknown config key {key}"
    try:
        val = literal_eval(val)
    except (SyntaxError, ValueError):
        pass
    assert type(val) == type(globals()[key]), f"type mismatch for {key}"
    print(f"overriding: {key} = {val}")
    globals()[key] = val
config = {k: v for k, v in globals().items() if not k.startswith("_") and isinstance(v, (int, float, str))}

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta", "rho", "tau"]


class SentenceDataset(Dataset):
    """Synthetic 'sentences'; label 1 if a word from the second half of WORDS dominates."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed + i)
        bias = rng.random()
        p = np.r_[np.full(6, 1 - bias), np.full(6, bias)]
        words = rng.choice(WORDS, size=int(rng.integers(80, 240)), p=p / p.sum())
        return " ".join(words), int(bias > 0.5)


def collate(samples):
    texts, labels = zip(*samples)
    x = np.zeros((len(texts), n_hash), dtype=np.float32)
    for row, text in enumerate(texts):
        data = text.encode()
        ids = [zlib.crc32(data[j:j + n]) % n_hash for n in (2, 3, 4, 5) for j in range(len(data) - n + 1)]
        x[row] = np.bincount(ids, minlength=n_hash)
    return torch.from_numpy(np.log1p(x)), torch.tensor(labels, dtype=torch.float32)


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / warmup_iters
    ratio = (it - warmup_iters) / max(1, max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


torch.manual_seed(seed)
dataset = SentenceDataset(n_samples, seed)
loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers, collate_fn=collate,
                    drop_last=True)
model = nn.Sequential(nn.Linear(n_hash, 256), nn.GELU(), nn.Linear(256, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.1)

iter_num, epoch = 0, 0
t0 = time.time()
while iter_num < max_iters:
    losses = []
    for X, Y in loader:
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        logits = model(X).squeeze(-1)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        iter_num += 1
        if iter_num >= max_iters:
            break
    print(f"epoch {epoch}: loss {np.mean(losses):.4f}, batches {len(losses)}, iter {iter_num}, lr {lr:.2e}, "
          f"time {time.time() - t0:.1f}s", flush=True)
    epoch += 1
