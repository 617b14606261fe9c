"""Group an ImageFolder into WebDataset tar shards, check shards, and load them for training.

Why WebDataset: its shards are plain POSIX tar files (inspect them with `tar tf`, write them with
any tar tool), it is the format the PyTorch ecosystem reads at scale, it splits shards across
DataLoader workers and DDP ranks by itself, and it streams each shard with one open and large
sequential reads, which is the whole point on a network file system. A home-made container (as
gpufs' `.mytar`) would need its own reader, checker and documentation.

A shard holds samples `<class>/<index>.jpg` (the file's bytes, unchanged) and `<class>/<index>.cls`
(the label as text). `index.json` lists the shards in order with their sample counts and, per
sample, where its JPEG bytes start in the tar, how many there are and its label: the kit's own
reader (shardread.py) reads a batch as one byte range with no tar parsing, and any WebDataset
reader still reads the same files.

Tiled shards (`--tile T`) group the images themselves as well as the files: T x T consecutive
samples of one size are pasted into one JPEG, a sheet (`sheetNNNNNN.jpg`, with their labels in
`sheetNNNNNN.labels`), and each sample's entry in the index also gives its cell in the sheet.
Why: a GPU's JPEG decoder (nvJPEG) pays a fixed cost for every image it decodes, and for 160 px
images that cost, not the pixels, is the limit (docs/small-files.md). The kit's reader cuts each
sample out of its sheet; a WebDataset reader sees one sample per sheet. The sheet is encoded again
(quality 95), so its pixels differ slightly from the files'.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import tarfile
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
import webdataset as wds
from PIL import Image
from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

INDEX = "index.json"
INDEX_VERSION = 2  # 2: each shard lists its samples' JPEG offsets, sizes and labels
SHEET_QUALITY = 95  # a tiled sheet is encoded again; high, so the second encoding changes little


class ShardError(ValueError):
    """A shard that cannot be read (truncated, a member missing, not a tar): one line, exit 2."""


def folder_samples(folder: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """(path, label) pairs in ImageFolder's own order, so the folder and the shards agree."""
    classes, class_to_idx = find_classes(str(folder))
    return make_dataset(str(folder), class_to_idx, extensions=IMG_EXTENSIONS), classes


def sample_order(n: int, seed: int) -> list[int]:
    """The order samples are written in: the permutation that the seeded sampler of lesson 1's
    training script draws first, so reading the shards in order is the folder read with `shuffled(dataset, seed)`."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()


def write_shards(folder: Path, out: Path, per_shard: int, seed: int = 0, tile: int = 1,
                 jobs: int | None = None) -> dict:
    """Write OUT/shard-NNNNNN.tar of `per_shard` samples each, then OUT/index.json.

    With tile > 1, each run of tile x tile samples of a shard becomes one sheet (see the module's
    docstring), and the shards are made in `jobs` processes (default: one per usable CPU), since
    each image is decoded and each sheet encoded. Each shard is written under a temporary name and
    renamed when complete, so an interrupted run never leaves a half shard behind a valid name.
    """
    samples, classes = folder_samples(folder)
    if not samples:
        raise ShardError(f"{folder}: no images in ImageFolder layout (FOLDER/<class>/<file>.jpg)")
    out.mkdir(parents=True, exist_ok=True)
    order = sample_order(len(samples), seed)
    work = [(out, number, [samples[i] for i in order[start:start + per_shard]], classes, tile, start)
            for number, start in enumerate(range(0, len(order), per_shard))]
    jobs = 1 if tile == 1 else min(jobs or len(os.sched_getaffinity(0)), len(work))
    with ProcessPoolExecutor(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        run = pool.map if pool is not None else map
        if tile > 1:  # every image one size, checked from the headers before any shard is written
            sizes = set().union(*run(_image_sizes, [[path for path, _ in item[2]] for item in work]))
            if len(sizes) > 1:
                (w1, h1), (w2, h2) = sorted(sizes)[:2]
                raise ShardError(f"{folder}: images of {len(sizes)} sizes ({w1}x{h1}, {w2}x{h2}, ...); --tile needs "
                                 "every image the same size: resize them first, or leave out --tile")
        written = list(run(_write_shard, work))
    index = {"format": "webdataset", "version": INDEX_VERSION, "samples": len(samples), "per_shard": per_shard,
             "seed": seed, "classes": classes, "shards": written}
    if tile > 1:
        (width, height), = sizes
        index["tile"], index["cell"] = tile, [height, width]  # cell: [height, width] of every sample
    (out / INDEX).write_text(json.dumps(index, separators=(",", ":")) + "\n")  # 50,000 samples: 1 MB
    return index


def _image_sizes(paths: list[str]) -> set[tuple[int, int]]:
    """The (width, height) of the images, read from their headers only."""
    sizes = set()
    for path in paths:
        with Image.open(path) as im:
            sizes.add(im.size)
    return sizes


def _write_shard(item: tuple[Path, int, list[tuple[str, int]], list[str], int, int]) -> dict:
    """One shard of (path, label) samples, and its index entry."""
    out, number, chunk, classes, tile, start = item
    name = f"shard-{number:06d}.tar"
    tmp = out / f".{name}.tmp{os.getpid()}"
    try:
        # A fixed whole-second mtime: reproducible shards, and plain ustar headers (a float mtime
        # makes Python add a PAX header to every member, which doubles the parsing on read).
        with open(tmp, "wb") as f, wds.TarWriter(f, mtime=0) as sink:
            if tile == 1:
                for path, label in chunk:
                    sink.write({"__key__": f"{classes[label]}/{Path(path).stem}", "jpg": Path(path).read_bytes(),
                                "cls": label})
            else:
                for first in range(0, len(chunk), tile * tile):
                    group = chunk[first:first + tile * tile]
                    sheet = _sheet([path for path, _ in group], tile)
                    sink.write({"__key__": f"sheet{start + first:06d}", "jpg": sheet,
                                "labels": " ".join(str(label) for _, label in group)})
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, out / name)
    labels = [label for _, label in chunk]
    return {"name": name, "samples": len(chunk), "jpg": _jpg_entries(out / name, labels, tile)}


def _sheet(paths: list[str], tile: int) -> bytes:
    """One JPEG of the images (all one size) in rows of `tile`."""
    images = []
    for path in paths:
        with Image.open(path) as im:
            images.append(im.convert("RGB"))
    width, height = images[0].size
    sheet = Image.new("RGB", (tile * width, -(-len(images) // tile) * height))
    for k, im in enumerate(images):
        sheet.paste(im, ((k % tile) * width, (k // tile) * height))
    buffer = io.BytesIO()
    sheet.save(buffer, format="JPEG", quality=SHEET_QUALITY)
    return buffer.getvalue()


def _jpg_entries(shard: Path, labels: list[int], tile: int = 1) -> list[list[int]]:
    """[offset of the JPEG bytes, their size, label] per sample, in the written order (read back from
    the tar); in tiled shards, [offset and size of the sample's sheet, label, cell in the sheet]."""
    with tarfile.open(shard) as tar:
        jpgs = [(m.offset_data, m.size) for m in tar if m.name.endswith(".jpg")]
    cells = tile * tile
    if len(jpgs) != -(-len(labels) // cells):
        raise ShardError(f"shard {shard}: wrote {len(labels)} samples, found {len(jpgs)} .jpg members")
    if tile == 1:
        return [[offset, size, label] for (offset, size), label in zip(jpgs, labels)]
    return [[*jpgs[k // cells], label, k % cells] for k, label in enumerate(labels)]


def is_shard_dir(path: Path) -> bool:
    return (path / INDEX).is_file()


def read_index(shard_dir: Path) -> dict:
    try:
        index = json.loads((shard_dir / INDEX).read_text())
        index["shards"], index["samples"], index["classes"]  # noqa: B018  (the keys a loader needs)
        old = index.get("version", 1) < INDEX_VERSION or not all("jpg" in s for s in index["shards"])
    except FileNotFoundError:
        raise ShardError(f"{shard_dir}: no {INDEX}; write shards with `python -m small_files shard`") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ShardError(f"{shard_dir / INDEX}: not a shard index ({exc})") from None
    if old:
        raise ShardError(f"{shard_dir / INDEX}: written by an older kit (no sample offsets); "
                         "write the shards again with `python -m small_files shard`")
    return index


def untiled_urls(shard_dir: Path, what: str, index: dict | None = None) -> list[str]:
    """The shards' paths, for a reader that takes each .jpg member for one sample: tiled shards
    (one sheet a member) are refused with one line. `index`: the shards' index, if already read."""
    index = index or read_index(shard_dir)
    if index.get("tile", 1) > 1:
        raise ShardError(f"{shard_dir}: tiled shards (--tile {index['tile']}), one JPEG sheet for "
                         f"{index['tile'] ** 2} samples; {what} takes one JPEG a sample")
    return [str(shard_dir / s["name"]) for s in index["shards"]]


def check_shard(path: Path, expected: int | None = None, entries: list[list[int]] | None = None,
                tile: int = 1) -> int:
    """Read every header of one shard; return its sample count or raise ShardError naming it.
    With the index's entries, also check that each JPEG lies where the index says."""
    label_ext = "cls" if tile == 1 else "labels"
    members: dict[str, set[str]] = {}
    jpgs = []
    try:
        with open(path, "rb", buffering=1 << 20) as f, tarfile.open(fileobj=f, mode="r:") as tar:
            for m in tar:
                key, _, ext = m.name.rpartition(".")
                members.setdefault(key, set()).add(ext)
                if ext == "jpg":
                    jpgs.append([m.offset_data, m.size])
    except FileNotFoundError:
        raise ShardError(f"shard {path}: missing") from None
    except (tarfile.TarError, OSError) as exc:
        raise ShardError(f"shard {path}: unreadable tar ({exc})") from None
    for key, exts in members.items():
        if not {"jpg", label_ext} <= exts:
            lacking = ", ".join(sorted({"jpg", label_ext} - exts))
            raise ShardError(f"shard {path}: sample {key} has no .{lacking} member")
    samples = len(members) if tile == 1 else len(entries or [])
    if expected is not None and (samples != expected or len(members) != -(-expected // (tile * tile))):
        raise ShardError(f"shard {path}: {len(members)} {'samples' if tile == 1 else 'sheets'}, "
                         f"the index says {expected} samples")
    if entries is not None and jpgs != [e[:2] for e in entries if len(e) < 4 or e[3] == 0]:
        raise ShardError(f"shard {path}: its JPEGs are not where {INDEX} says; write the shards again")
    return samples


def check_shards(shard_dir: Path) -> tuple[int, list[str]]:
    """Check every shard the index lists; return (good samples, one problem line per bad shard)."""
    index = read_index(shard_dir)
    good, problems = 0, []
    for shard in index["shards"]:
        try:
            good += check_shard(shard_dir / shard["name"], shard["samples"], shard["jpg"], index.get("tile", 1))
        except ShardError as exc:
            problems.append(str(exc))
    return good, problems


def _raise_shard_error(exn: Exception) -> bool:
    """WebDataset's error handler: name the shard (WebDataset appends its url to the args)."""
    if isinstance(exn, ShardError):
        raise exn
    url = next((a for a in exn.args[1:] if isinstance(a, str) and a.endswith(".tar")), None)
    if url is None:  # the inner tar reader: let the shard-level reader add the url and call again
        raise exn
    reason = str(exn.args[0]).split(" @ ")[0] if exn.args else ""
    raise ShardError(f"shard {url}: unreadable ({type(exn).__name__}: {reason})") from None


def _pair(transform: Callable) -> Callable[[dict], tuple[torch.Tensor, int]]:
    def pair(sample: dict) -> tuple[torch.Tensor, int]:
        if "jpg" not in sample or "cls" not in sample:
            raise ShardError(f"shard {sample.get('__url__')}: sample {sample.get('__key__')} lacks "
                             f"a .{'jpg' if 'jpg' not in sample else 'cls'} member")
        return transform(sample["jpg"]), int(sample["cls"])
    return pair


def shard_dataset(shard_dir: Path, transform: Callable | None) -> wds.WebDataset:
    """The shards as an IterableDataset of (image, label), in the written order.

    The images are decoded in the loader's workers (decode("pil")), the shards split over the
    workers (and over DDP ranks with split_by_node). The written order was already shuffled
    with a seed, which is the order the sampler of lesson 1's script gives the folder. With transform=None
    the samples stay undecoded bytes (to time reading alone).
    """
    index = read_index(shard_dir)
    urls = untiled_urls(shard_dir, "WebDataset's reader (--reader webdataset)", index)
    pipeline = wds.WebDataset(urls, shardshuffle=False, nodesplitter=wds.split_by_node,
                              handler=_raise_shard_error, empty_check=False)
    if transform is not None:
        pipeline = pipeline.decode("pil", handler=_raise_shard_error)
    pipeline = pipeline.map(_pair(transform or (lambda data: data)))
    with warnings.catch_warnings():  # "with_length only sets __len__": that is all we want of it
        warnings.simplefilter("ignore")
        return pipeline.with_length(index["samples"])


def raw_samples(shard_dir: Path) -> Iterator[tuple[str, bytes, int]]:
    """(key, jpg bytes, label) in the written order, undecoded: for checks and round trips."""
    dataset = wds.WebDataset(untiled_urls(shard_dir, "raw_samples"), shardshuffle=False, handler=_raise_shard_error)
    for key, jpg, cls in dataset.to_tuple("__key__", "jpg", "cls"):
        yield key, jpg, int(cls)
