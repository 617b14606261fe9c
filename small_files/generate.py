"""Write a deterministic ImageFolder of small JPEGs: many files, each one real decoding work.

Why generated: the kit works offline, and a seed gives every learner and every test the same
bytes. The pictures are smooth colour fields (a low-resolution random grid, upsampled) plus
grain, so a 160-pixel JPEG is about as large and as costly to decode as an Imagenette-160 one;
each class has its own palette, so a model can learn them.
"""
from __future__ import annotations

import io
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

SPLITS = ("train", "val")


def class_names(classes: int) -> list[str]:
    return [f"class{c:02d}" for c in range(classes)]


def image_bytes(seed: int, index: int, label: int, size: int, quality: int = 90) -> bytes:
    """The JPEG of sample `index`: depends only on (seed, index, label, size, quality)."""
    rng = np.random.default_rng([seed, index])
    palette = np.random.default_rng([seed, 10_000_019, label]).uniform(40, 215, size=(3,))
    grid = rng.normal(0, 45, size=(6, 6, 3)) + palette
    field = Image.fromarray(np.clip(grid, 0, 255).astype(np.uint8)).resize((size, size), Image.BICUBIC)
    pixels = np.asarray(field, dtype=np.int16) + rng.integers(-12, 13, size=(size, size, 3), dtype=np.int16)
    out = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(out, format="JPEG", quality=quality)
    return out.getvalue()


def _write_range(args: tuple[Path, str, int, int, int, int, int]) -> int:
    root, split, start, stop, classes, seed, size = args
    names = class_names(classes)
    offset = 0 if split == "train" else 1 << 30  # the val images are other draws than the train ones
    for i in range(start, stop):
        label = i % classes
        path = root / split / names[label] / f"{i:06d}.jpg"
        path.write_bytes(image_bytes(seed, offset + i, label, size))
    return stop - start


def generate(root: Path, train: int, val: int, classes: int = 10, size: int = 160, seed: int = 0,
             jobs: int | None = None) -> dict[str, int]:
    """Write ROOT/{train,val}/classNN/NNNNNN.jpg (torchvision's ImageFolder layout).

    Sample i of a split has label i % classes, so every class gets its share. Files are written
    in parallel chunks; the bytes do not depend on how many processes wrote them.
    """
    counts = {"train": train, "val": val}
    for split in (split for split in SPLITS if counts[split]):
        for name in class_names(classes):
            (root / split / name).mkdir(parents=True, exist_ok=True)
    jobs = jobs or max(len(os.sched_getaffinity(0)), 1)
    chunk = 500
    work = [(root, split, start, min(start + chunk, n), classes, seed, size)
            for split, n in counts.items() for start in range(0, n, chunk)]
    if jobs == 1 or len(work) == 1:
        for item in work:
            _write_range(item)
    else:
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(_write_range, work))
    return counts
