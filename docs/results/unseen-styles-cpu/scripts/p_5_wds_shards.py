"""WebDataset-like streaming: the training set is a list of tar shards ("shard-000003.tar", members
"000123.input.npy" / "000123.cls", as webdataset writes them), read by an `IterableDataset` that opens each shard
with `tarfile`, decodes members with `np.load(BytesIO)`, augments, and keeps a small shuffle buffer. A
`worker_init_fn` splits the shard list by worker id through `get_worker_info()` (the pattern from the PyTorch
IterableDataset docs and pre-`wds.split_by_worker` code), so each worker streams a disjoint set of shards. The shards
are written to a temporary directory at start-up (synthetic data, no downloads). `--workers` default 2,
`persistent_workers` not set, batch size 32, 8 shards of 160 samples (40 batches an epoch at 0, 1, 2 or 4
workers, as each worker's share is a whole number of batches; at 3 workers it would be 41).

Data cost: real, ~1 ms per sample (tar member read, npy decode, a numpy augmentation chain), ~30 ms a batch, against
~10 ms of compute a step. A correct report: says that worker counts are not tried in an IterableDataset (the
workers split the stream; changing their number changes the batches), and still gives sound advice: the loader is
the bottleneck; on 2 CPUs 1 worker fits beside the main process, but the run's own 2 workers, measured untraced,
should not be cut if they were faster; the edit, if any, `--workers N`. Training must end with the plain run's
batches per epoch (40)."""
import argparse
import io
import os
import tarfile
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


def write_shards(root, n_shards=8, per_shard=160, seed=0):
    rng = np.random.default_rng(seed)
    paths = []
    for s in range(n_shards):
        path = os.path.join(root, f"shard-{s:06d}.tar")
        with tarfile.open(path, "w") as tar:
            for i in range(per_shard):
                key = f"{s * per_shard + i:06d}"
                x = rng.standard_normal((3, 24, 24)).astype(np.float32)
                y = int(rng.integers(0, 10))
                buf = io.BytesIO()
                np.save(buf, x)
                for name, data in ((f"{key}.input.npy", buf.getvalue()), (f"{key}.cls", str(y).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        paths.append(path)
    return paths


def augment(x, rng):
    if rng.random() < 0.5:
        x = x[:, :, ::-1]
    for _ in range(5):
        x = x + 0.05 * np.tanh(x) + rng.normal(0, 0.01, size=x.shape).astype(np.float32)
    k = np.array([0.25, 0.5, 0.25], dtype=np.float32)
    x = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 2, x)
    return np.ascontiguousarray(x, dtype=np.float32)


class ShardStream(IterableDataset):
    def __init__(self, shards, buffer_size=64, seed=0):
        super().__init__()
        self.shards = list(shards)
        self.buffer_size = buffer_size
        self.seed = seed
        self.epoch = 0

    def samples(self):
        for path in self.shards:
            with tarfile.open(path) as tar:
                current = {}
                for member in tar:
                    key, ext = member.name.split(".", 1)
                    current.setdefault(key, {})[ext] = tar.extractfile(member).read()
                    if len(current[key]) == 2:
                        rec = current.pop(key)
                        yield np.load(io.BytesIO(rec["input.npy"])), int(rec["cls"])

    def __iter__(self):
        info = get_worker_info()
        wid = info.id if info is not None else 0
        rng = np.random.default_rng((self.seed, self.epoch, wid))
        buffer = []
        for x, y in self.samples():
            buffer.append((x, y))
            if len(buffer) >= self.buffer_size:
                x, y = buffer.pop(rng.integers(len(buffer)))
                yield torch.from_numpy(augment(x, rng)), y
        rng.shuffle(buffer)
        for x, y in buffer:
            yield torch.from_numpy(augment(x, rng)), y


def split_shards_by_worker(worker_id):
    info = get_worker_info()
    dataset = info.dataset
    dataset.shards = dataset.shards[worker_id::info.num_workers]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def train(args, shards):
    dataset = ShardStream(shards)
    loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers,
                        worker_init_fn=split_shards_by_worker)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    for epoch in range(args.epochs):
        dataset.epoch = epoch
        start, total, batches, samples = time.time(), 0.0, 0, 0
        for x, y in loader:
            out = model(x)
            loss = F.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
            samples += len(y)
        print(f"epoch {epoch} batches {batches} samples {samples} loss {total / batches:.4f} "
              f"time {time.time() - start:.2f}s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        shards = write_shards(root)
        train(args, shards)


if __name__ == "__main__":
    main()
