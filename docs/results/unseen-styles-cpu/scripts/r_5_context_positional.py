"""Context-manager-heavy training, in code ported from an older framework: the whole run under
`torch.autograd.set_detect_anomaly(False)`, `warnings.catch_warnings()` and a `contextlib.ExitStack` that closes a
log file; each epoch under a hand-written `@contextmanager` timer; each batch's forward, backward and step under
`torch.autograd.profiler.record_function(...)` blocks with the timer beside them, the metric update under
`torch.no_grad()`. The DataLoader is called positionally, as the port kept it:
`DataLoader(train_set, args.batch_size, True, None, None, args.workers)` (dataset, batch_size, shuffle, sampler,
batch_sampler, num_workers). Items are synthetic sentences turned into hashed character-trigram vectors in pure
Python (about 1 ms an item). Default `--workers 0`.

A correct report: the loop is run()'s `for x, y in loader:`; each of the 4 epochs keeps 63 batches; an edit that
changes the count is `--workers N`; one on the DataLoader's line cannot add `num_workers=` beside the positional one
(TypeError: got multiple values for argument 'num_workers').
"""
import argparse
import collections
import contextlib
import os
import tempfile
import time
import warnings
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.profiler import record_function
from torch.utils.data import DataLoader, Dataset

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon "
         "phi chi psi omega red green blue cyan magenta yellow black white").split()


@contextlib.contextmanager
def timed(name, store):
    start = time.perf_counter()
    try:
        yield
    finally:
        store[name] += time.perf_counter() - start


class HashedTrigrams(Dataset):
    def __init__(self, n=4000, dim=8192, seed=0):
        g = np.random.default_rng(seed)
        self.labels = g.integers(0, 4, n)
        self.lengths = g.integers(150, 200, n)
        self.dim = dim

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        label = int(self.labels[i])
        words = [WORDS[label * 8 + int(k) % 8] if r.random() < 0.6 else WORDS[int(k)]
                 for k in r.integers(0, len(WORDS), int(self.lengths[i]))]
        text = " ".join(words)
        vec = np.zeros(self.dim, dtype=np.float32)
        for j in range(len(text) - 2):
            vec[zlib.crc32(text[j:j + 3].encode()) % self.dim] += 1.0
        return torch.from_numpy(vec / np.sqrt(vec @ vec)), label


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    return parser.parse_args()


def run(args, log_path):
    torch.manual_seed(0)
    train_set = HashedTrigrams()
    loader = DataLoader(train_set, args.batch_size, True, None, None, args.workers)
    model = nn.Sequential(nn.Linear(train_set.dim, 1024), nn.ReLU(), nn.Linear(1024, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    with torch.autograd.set_detect_anomaly(False), warnings.catch_warnings(), contextlib.ExitStack() as stack:
        warnings.simplefilter("ignore")
        log = stack.enter_context(open(log_path, "w"))
        for epoch in range(args.epochs):
            times, correct, seen, total, batches = collections.defaultdict(float), 0, 0, 0.0, 0
            with timed("epoch", times):
                for x, y in loader:
                    with record_function("forward"), timed("forward", times):
                        logits = model(x)
                        loss = F.cross_entropy(logits, y)
                    with record_function("backward"), timed("backward", times):
                        optimizer.zero_grad()
                        loss.backward()
                    with record_function("step"), timed("step", times):
                        optimizer.step()
                    with torch.no_grad():
                        correct += (logits.argmax(1) == y).sum().item()
                        seen += y.numel()
                        total += loss.item()
                        batches += 1
            line = (f"epoch {epoch} batches {batches} loss {total / batches:.4f} acc {correct / seen:.3f} "
                    + " ".join(f"{k} {v:.2f}s" for k, v in times.items()))
            print(line, flush=True)
            log.write(line + "\n")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        run(get_args(), os.path.join(tmp, "train.log"))
