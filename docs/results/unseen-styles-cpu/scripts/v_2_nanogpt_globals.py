"""nanoGPT style configuration: every setting is a module-level global (`batch_size = 32`, `num_workers = 1`, ...),
then a "poor man's configurator" walks `sys.argv[1:]`: a bare name is a config file exec'd into globals(),
`--key=value` overrides a global via `ast.literal_eval` (type-checked against the old value). No argparse.
`config = {k: globals()[k] for k in config_keys}` is printed. Training is a plain module-level loop (no main()):
`for epoch in range(max_epochs): for X, Y in train_loader:`. A tiny char-level MLP language model on a synthetic
text whose windows are built (and byte-noised) in __getitem__.

A correct report: the loop is the module-level `for X, Y in train_loader:`; 3 epochs of 36 batches (1152 windows,
batch 32); the count comes from the global `num_workers = 1`; the edit is that line, or `--num_workers=N` on the
command line (with an `=`, and the key spelled with an underscore, as the configurator demands).
"""
import sys
import time
from ast import literal_eval

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

# -----------------------------------------------------------------------------
# default config values
out_dir = 'out'
batch_size = 32
block_size = 32
n_embd = 48
max_epochs = 3
learning_rate = 3e-3
num_workers = 1
seed = 1337
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str))]
for arg in sys.argv[1:]:
    if '=' not in arg:
        # assume it's the name of a config file
        assert not arg.startswith('--')
        print(f"Overriding config with {arg}:")
        with open(arg) as f:
            exec(f.read())
    else:
        assert arg.startswith('--')
        key, val = arg.split('=')
        key = key[2:]
        if key in globals():
            try:
                attempt = literal_eval(val)
            except (SyntaxError, ValueError):
                attempt = val
            assert type(attempt) == type(globals()[key])
            print(f"Overriding: {key} = {attempt}")
            globals()[key] = attempt
        else:
            raise ValueError(f"Unknown config key: {key}")
config = {k: globals()[k] for k in config_keys}
# -----------------------------------------------------------------------------
print(config)
torch.manual_seed(seed)

rng = np.random.default_rng(seed)
words = ["the", "cat", "sat", "on", "mat", "and", "dog", "ran", "far", "away", "from", "home"]
text = " ".join(rng.choice(words, 20000))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = np.array([stoi[c] for c in text], dtype=np.int64)
vocab_size = len(chars)


class Windows(Dataset):
    def __init__(self, data, n):
        self.data, self.n = data, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        start = (i * 53) % (len(self.data) - block_size - 1)
        chunk = self.data[start:start + block_size + 1].copy()
        noise = g.random(block_size) < 0.05
        chunk[:-1][noise] = g.integers(0, vocab_size, noise.sum())
        # stand-in for tokenising a shard on the fly
        _ = np.fft.rfft(g.standard_normal((16, 256)), axis=1)
        time.sleep(0.003)
        return torch.from_numpy(chunk[:-1]), torch.from_numpy(chunk[1:])


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        x = x + self.mlp(x)
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, vocab_size), targets.view(-1))


train_loader = DataLoader(Windows(data, 1152), batch_size=batch_size, shuffle=True, num_workers=num_workers)
model = TinyLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
for epoch in range(max_epochs):
    t0 = time.time()
    losses = []
    for X, Y in train_loader:
        loss = model(X, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"epoch {epoch}: loss {np.mean(losses):.4f}, iters {len(losses)}, workers {train_loader.num_workers}, "
          f"time {time.time() - t0:.1f}s")
