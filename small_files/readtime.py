"""Worker-side timing: per batch, how long the loader's workers spent opening and reading files
against decoding and transforming the images.

Why: a loader-bound training loop says only that batches come late. More workers help when
decoding is the cost; when reads are (many small files on a network file system, a cold cache)
they mostly queue more requests, and the fix is fewer, larger files or a local copy. The
numbers here are plain measurements, taken inside the workers with `time.perf_counter` and
handed back with each sample, so they need no profiler and no shared state between processes.
"""
from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from PIL import Image
from torch.utils.data import DataLoader, Dataset, IterableDataset, Subset

from digits.data import shuffled
from small_files.transforms import train_transform  # the lesson's transform, so the work is the same
from small_files.shards import folder_samples, is_shard_dir, untiled_urls

Timed = tuple[object, int, float, float]  # (image, label, read seconds, decode seconds)


def _decode(data: bytes, transform: Callable) -> object:
    return transform(Image.open(io.BytesIO(data)).convert("RGB"))


class TimedFolder(Dataset):
    """The image folder: read = open + read of the file, decode = JPEG decode + transform."""

    def __init__(self, folder: Path, transform: Callable) -> None:
        self.samples, _ = folder_samples(folder)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Timed:
        path, label = self.samples[index]
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            data = f.read()
        t1 = time.perf_counter()
        image = _decode(data, self.transform)
        return image, label, t1 - t0, time.perf_counter() - t1


class TimedShards(IterableDataset):
    """The shards: read = getting the next raw sample out of the tar stream (opening a shard
    when one ends), decode = JPEG decode + transform."""

    def __init__(self, shard_dir: Path, transform: Callable) -> None:
        import webdataset as wds
        urls = untiled_urls(shard_dir, "split (it times WebDataset's reader)")
        self.raw = wds.WebDataset(urls, shardshuffle=False, nodesplitter=wds.split_by_node, empty_check=False)
        self.transform = transform

    def __iter__(self) -> Iterator[Timed]:
        samples = iter(self.raw)  # called inside each worker: WebDataset gives it its own shards
        while True:
            t0 = time.perf_counter()
            try:
                sample = next(samples)
            except StopIteration:
                return
            t1 = time.perf_counter()
            image = _decode(sample["jpg"], self.transform)
            yield image, int(sample["cls"]), t1 - t0, time.perf_counter() - t1


def split(source: Path, workers: int, samples: int | None = None, image_size: int = 128,
          batch_size: int = 64, seed: int = 1) -> dict:
    """One loader pass; per batch, the workers' read and decode seconds (summed over its samples)."""
    transform = train_transform(image_size)
    if is_shard_dir(source):
        ds: Dataset = TimedShards(source, transform)
    else:
        folder = TimedFolder(source, transform)
        ds = Subset(folder, list(shuffled(folder, seed))[:samples])
    read, decode, seen = [], [], 0
    start = time.perf_counter()
    for batch in DataLoader(ds, batch_size=batch_size, num_workers=workers, collate_fn=list):
        read.append(sum(s[2] for s in batch))
        decode.append(sum(s[3] for s in batch))
        seen += len(batch)
        if samples is not None and seen >= samples:
            break
    wall = time.perf_counter() - start
    total = sum(read) + sum(decode)
    return {"source": str(source), "workers": workers, "batch_size": batch_size, "batches": len(read),
            "samples": seen, "wall_seconds": wall,
            "read_ms_per_batch": 1e3 * statistics.fmean(read) if read else 0.0,
            "decode_ms_per_batch": 1e3 * statistics.fmean(decode) if decode else 0.0,
            "read_share": sum(read) / total if total > 0 else 0.0,
            "read_ms_batches": [round(1e3 * r, 3) for r in read],
            "decode_ms_batches": [round(1e3 * d, 3) for d in decode]}
