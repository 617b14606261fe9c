"""Read shards through their index: whole batches, spread evenly over DDP ranks and loader workers.

Why not WebDataset's own reader (shards.shard_dataset, kept to measure against):
1. it parses two tar member headers per sample in Python (.cls, then .jpg); on the 2-core machine
   that, not the file system, bounded the shards over sshfs. The index (index.json) holds each
   JPEG's offset, size and label, so a worker reads one byte range per batch and slices it;
2. it hands each worker whole shards: 49 shards over 14 workers leave some with 4 and some with
   3, and the end of the epoch runs on fewer workers. Here batch c goes to rank c % R and, on that
   rank, to worker (c // R) % W: no worker has more than one batch more than another, and the
   loader's round robin over its workers hands the batches over in the written order (the
   folder's shuffled order) whatever the number of workers.

In tiled shards (shards.py, `--tile`) several samples share one JPEG, a sheet: a batch then reads
each sheet once, and hands over with it where each sample lies in its sheet (`cells`).

Each tar header in front of a JPEG is checked (ustar magic, a .jpg name, the size), so shards
rewritten without their index, or cut short, stop the run with one line naming the shard.
"""
from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from torch.utils.data import IterableDataset, get_worker_info

from small_files.shards import ShardError, read_index

HEADER = 512  # a ustar header, in front of every member's bytes
READ_AHEAD = 2  # batches a worker's reader thread fetches while the worker decodes
Entry = tuple[int, int, int, int, int]  # (shard, offset of the JPEG bytes, their size, label, cell or -1)


def entries(index: dict) -> list[Entry]:
    """Every sample of the index in the written order."""
    return [(n, e[0], e[1], e[2], e[3] if len(e) > 3 else -1)
            for n, shard in enumerate(index["shards"]) for e in shard["jpg"]]


def cells(cell: list[int], places: list[tuple[int, int]], tile: int) -> torch.Tensor:
    """Per sample of a batch, (which of the batch's sheets, x, y, width, height) of its image,
    from (sheet, cell number) pairs, the sheets' `tile` columns and the images' [height, width]."""
    height, width = cell
    return torch.tensor([(sheet, (k % tile) * width, (k // tile) * height, width, height) for sheet, k in places],
                        dtype=torch.int64).reshape(-1, 5)


def my_batches(samples: int, batch: int, ranks: int, rank: int, workers: int, worker: int) -> list[range]:
    """The batches (ranges of sample positions) that one worker of one rank reads.

    With several ranks each gets the same number of batches (DDP steps in lockstep); the
    batches that do not divide evenly are left out, as DistributedSampler(drop_last=True) does.
    """
    chunks = math.ceil(samples / batch)
    if ranks > 1:
        chunks = chunks // ranks * ranks
    first = rank + ranks * worker
    return [range(c * batch, min((c + 1) * batch, samples)) for c in range(first, chunks, ranks * workers)]


def _checked_header(data: memoryview, at: int, size: int) -> bool:
    head = bytes(data[at:at + HEADER])
    if head[257:262] != b"ustar" or not head[:100].rstrip(b"\0").endswith(b".jpg"):
        return False
    try:
        return int(head[124:136].strip(b"\0 ") or b"0", 8) == size
    except ValueError:
        return False


class ShardBatches(IterableDataset):
    """Batches of `batch_size` samples made by `make_batch(list of JPEG bytes, labels)`.

    Use it with DataLoader(batch_size=None): the batching is done here, so that a batch is one
    read of consecutive bytes. `len()` is the number of batches this rank reads.
    """

    def __init__(self, shard_dir: Path, batch_size: int, make_batch: Callable[[list[bytes], list[int]], object],
                 ranks: int = 1, rank: int = 0) -> None:
        index = read_index(shard_dir)
        self.urls = [str(shard_dir / s["name"]) for s in index["shards"]]
        self.entries = entries(index)
        self.tile, self.cell = index.get("tile", 1), index.get("cell")
        self.batch_size, self.make_batch, self.ranks, self.rank = batch_size, make_batch, ranks, rank

    @property
    def samples(self) -> int:
        """Samples this rank reads in an epoch (all workers together)."""
        return sum(len(r) for r in my_batches(len(self.entries), self.batch_size, self.ranks, self.rank, 1, 0))

    def __len__(self) -> int:
        return len(my_batches(len(self.entries), self.batch_size, self.ranks, self.rank, 1, 0))

    def read(self, positions: range, files: dict[int, int]) -> tuple[list[bytes], list[int], torch.Tensor | None]:
        """The JPEG bytes and labels of consecutive samples: one read per shard they lie in. In tiled
        shards the JPEGs are the sheets the samples lie in, each once, and `cells` says where."""
        jpegs, labels, places = [], [], []
        todo = [self.entries[i] for i in positions]
        while todo:
            shard = todo[0][0]
            group = [e for e in todo if e[0] == shard]
            todo = todo[len(group):]
            lo, hi = group[0][1] - HEADER, group[-1][1] + group[-1][2]
            url = self.urls[shard]
            try:
                if shard not in files:
                    files[shard] = os.open(url, os.O_RDONLY)
                data = memoryview(os.pread(files[shard], hi - lo, lo))
            except OSError as exc:
                raise ShardError(f"shard {url}: unreadable ({exc.strerror or exc})") from None
            if len(data) < hi - lo:
                raise ShardError(f"shard {url}: unreadable (cut short: {lo + len(data)} bytes, "
                                 f"the index needs {hi})")
            last = None
            for _, off, size, label, cell in group:
                if off != last:  # a new JPEG (in tiled shards, consecutive samples share one)
                    if not _checked_header(data, off - HEADER - lo, size):
                        raise ShardError(f"shard {url}: no JPEG member where the index says (byte {off}); "
                                         "write the shards again")
                    jpegs.append(data[off - lo:off - lo + size].tobytes())
                    last = off
                labels.append(label)
                places.append((len(jpegs) - 1, cell))
        return jpegs, labels, None if self.tile == 1 else cells(self.cell, places, self.tile)

    def __iter__(self) -> Iterator[object]:
        """This worker's batches, each read by a helper thread while the batches before it are decoded.

        Why a thread: over a network file system a read waits on the server, and a worker that reads,
        then decodes, leaves its core idle meanwhile. The reads release the GIL, so they overlap the
        decoding. (Measured only together with stacking into shared memory: 0 to 6 % more images/s on
        H100 nodes over sshfs cold; docs/results/issue36-slots, calls 1 to 3.)
        """
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        mine = my_batches(len(self.entries), self.batch_size, self.ranks, self.rank, workers, worker)
        files: dict[int, int] = {}
        reader = ThreadPoolExecutor(1, thread_name_prefix="shard-read")
        try:
            ahead = deque(reader.submit(self.read, positions, files) for positions in mine[:READ_AHEAD])
            for i in range(len(mine)):
                jpegs, labels, where = ahead.popleft().result()
                if i + READ_AHEAD < len(mine):
                    ahead.append(reader.submit(self.read, mine[i + READ_AHEAD], files))
                yield self.make_batch(jpegs, labels) if where is None else self.make_batch(jpegs, labels, where)
        finally:
            reader.shutdown(wait=True, cancel_futures=True)  # no read left running when the files close
            for fd in files.values():
                os.close(fd)


def first_jpeg(shard_dir: Path) -> bytes:
    """The bytes of the first sample's JPEG (to learn the image size before the workers start), read
    and checked as every batch is (`ShardBatches.read`); in tiled shards, its sheet's."""
    shards = ShardBatches(shard_dir, 1, lambda jpegs, labels: None)
    if not shards.entries:
        raise ShardError(f"{shard_dir}: the index lists no samples")
    files: dict[int, int] = {}
    try:
        return shards.read(range(1), files)[0][0]
    finally:
        for fd in files.values():
            os.close(fd)


def ddp_rank() -> tuple[int, int]:
    """(ranks, rank) of an initialised process group, else (1, 0)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size(), torch.distributed.get_rank()
    return 1, 0
