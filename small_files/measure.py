"""How fast a DataLoader delivers samples from a folder or from shards: the benchmark's number.

One pass over the first N samples, in the order training reads them (the folder through lesson
1's seeded sampler, the shards in their written order), with the given number of workers.
`decode=False` hands over the file bytes (what the storage costs); `decode=True` adds the
training transform (what a training step would get). Shards are read as training reads them
(reader="index", shardread.py) or with WebDataset's own tar reader (reader="webdataset"), to
measure what the index saves.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Subset
from torchvision import datasets

from digits.data import shuffled
from small_files.shardread import ShardBatches
from small_files.shards import is_shard_dir, shard_dataset
from small_files.transforms import decode_images, read_bytes, train_transform  # the lesson's own work

READERS = ("index", "webdataset")


class Pairs:
    """A ShardBatches batch as (sample, label) pairs, decoded and transformed when given a transform."""

    def __init__(self, transform: Callable | None) -> None:
        self.transform = transform

    def __call__(self, jpegs: list[bytes], labels: list[int],
                 where: torch.Tensor | None = None) -> list[tuple[object, int]]:
        if self.transform is not None:
            return [(self.transform(im), label) for im, label in zip(decode_images(jpegs, where), labels)]
        if where is None:
            return list(zip(jpegs, labels))
        # tiled shards: a sheet's bytes go with the first of its samples, so each is counted once
        sheets = where[:, 0].tolist()
        return [(jpegs[n] if k == 0 or sheets[k - 1] != n else b"", label)
                for k, (n, label) in enumerate(zip(sheets, labels))]


def _loader(source: Path, workers: int, samples: int | None, decode: bool, seed: int,
            image_size: int, batch_size: int, reader: str = "index") -> DataLoader:
    transform = train_transform(image_size) if decode else None
    if is_shard_dir(source) and reader == "index":
        return DataLoader(ShardBatches(source, batch_size, Pairs(transform)), batch_size=None, num_workers=workers)
    if is_shard_dir(source):
        return DataLoader(shard_dataset(source, transform), batch_size=batch_size, num_workers=workers, collate_fn=list)
    ds = datasets.ImageFolder(str(source), transform=transform) if decode else \
        datasets.DatasetFolder(str(source), loader=read_bytes, extensions=(".jpg",))
    order = list(shuffled(ds, seed))[:samples]
    return DataLoader(Subset(ds, order), batch_size=batch_size, num_workers=workers, collate_fn=list)


def read_rate(source: Path, workers: int, samples: int | None = None, decode: bool = False, seed: int = 0,
              image_size: int = 128, batch_size: int = 64, reader: str = "index") -> dict:
    """Samples per second for one pass (worker start-up included, as a job would pay it)."""
    start = time.perf_counter()
    seen, size = 0, 0
    for batch in _loader(source, workers, samples, decode, seed, image_size, batch_size, reader):
        for data, _ in batch:
            seen += 1
            size += len(data) if isinstance(data, bytes) else 0
        if samples is not None and seen >= samples:
            break
    seconds = time.perf_counter() - start
    return {"samples": seen, "seconds": seconds, "samples_per_s": seen / seconds, "mb_per_s": size / seconds / 1e6}
