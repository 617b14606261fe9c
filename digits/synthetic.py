"""Offline stand-in for MNIST: handwritten-looking digits drawn from stroke templates.

Compute nodes often have no internet, and workshop rooms often have slow internet, so lesson 1
must run without downloading MNIST.  This module writes a digit set in MNIST's own IDX files,
so torchvision's `datasets.MNIST` reads it unchanged and the loader path (PIL images, ToTensor,
workers) costs what it costs on the real data.

How a digit is made: each class is a few pen strokes (polylines and arcs in a unit box).  A bank
of writer "styles" bends each stroke a little and picks a pen width; every image then takes one
style, a random affine warp (rotation, scale, shear, shift), a brightness and pixel noise.  Train
and test use disjoint style banks, so the test measures generalisation to unseen writers.

Deterministic: images are made in chunks, each from its own seeded generator, so the first N
images of a larger set equal a set of size N; `ensure()` therefore reuses a bigger set on disk.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import struct
from pathlib import Path

import torch
import torch.nn.functional as F

FORMAT = "synthetic-digits-v1"
CHUNK = 1000          # images per seeded chunk (the unit of the prefix property)
STYLES = 48           # writer styles per class in each split's bank
SIZE, BOX = 28, 20    # MNIST puts the digit in a 20x20 box centred in 28x28
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _arc(cx: float, cy: float, rx: float, ry: float, start: float, stop: float) -> list[tuple[float, float]]:
    """Points on an ellipse arc; angles in degrees, y grows downwards as in an image."""
    n = max(4, int(abs(stop - start) / 15))
    return [(cx + rx * math.cos(math.radians(a)), cy + ry * math.sin(math.radians(a)))
            for a in (start + (stop - start) * i / n for i in range(n + 1))]


# Each digit: a list of (stroke points, probability that a writer draws this stroke).
GLYPHS: dict[int, list[tuple[list[tuple[float, float]], float]]] = {
    0: [(_arc(.5, .5, .28, .42, 0, 360), 1.0)],
    1: [([(.52, .06), (.48, .94)], 1.0), ([(.3, .3), (.52, .06)], .6), ([(.3, .94), (.7, .94)], .25)],
    2: [(_arc(.5, .32, .26, .24, 200, 380) + [(.2, .92), (.82, .92)], 1.0)],
    3: [(_arc(.48, .29, .24, .21, 200, 450) + _arc(.48, .71, .26, .21, 270, 520), 1.0)],
    4: [([(.66, .94), (.66, .06), (.16, .66), (.86, .66)], 1.0)],
    5: [([(.76, .08), (.32, .08), (.28, .45)] + _arc(.5, .66, .26, .24, 235, 520), 1.0)],
    6: [([(.72, .08), (.42, .34), (.26, .66)] + _arc(.5, .68, .24, .23, 180, 540), 1.0)],
    7: [([(.16, .08), (.84, .08), (.4, .94)], 1.0), ([(.34, .52), (.74, .52)], .2)],
    8: [(_arc(.5, .28, .2, .2, 90, 450), 1.0), (_arc(.5, .7, .25, .22, -90, 270), 1.0)],
    9: [(_arc(.48, .32, .23, .22, 0, 360), 1.0), ([(.71, .32), (.62, .94)], 1.0)],
}


def _generator(*parts: object) -> torch.Generator:
    """A CPU generator seeded from a readable key, so every chunk has its own stream."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)


def _render(segments: torch.Tensor, half_width: torch.Tensor) -> torch.Tensor:
    """Anti-aliased 28x28 images of line segments.

    segments: (B, S, 2, 2) end points in unit-box coordinates; half_width: (B,) pen half-width in
    pixels.  A pixel's ink falls off linearly over one pixel past the pen's edge.
    """
    ys, xs = torch.meshgrid(torch.arange(SIZE) + .5, torch.arange(SIZE) + .5, indexing="ij")
    pixels = torch.stack([xs, ys], -1).reshape(1, -1, 1, 2)                  # (1, 784, 1, 2)
    segs = segments * BOX + (SIZE - BOX) / 2
    a, ab = segs[:, None, :, 0], (segs[:, :, 1] - segs[:, :, 0])[:, None]   # (B, 1, S, 2)
    t = (((pixels - a) * ab).sum(-1) / (ab * ab).sum(-1).clamp_min(1e-9)).clamp(0, 1)
    dist = (pixels - (a + t.unsqueeze(-1) * ab)).norm(dim=-1).amin(dim=2)   # (B, 784)
    return (half_width[:, None] + .5 - dist).clamp(0, 1).reshape(-1, SIZE, SIZE)


def _style_bank(seed: int, split: str) -> torch.Tensor:
    """(10, STYLES, 28, 28) glyphs: each stroke gets its own small warp, each style a pen width."""
    g = _generator(FORMAT, seed, split, "styles")
    bank = []
    for digit in range(10):
        segments = []
        for points, chance in GLYPHS[digit]:
            p = torch.tensor(points)
            centre = p.mean(0)
            warp = torch.eye(2) + (torch.rand(STYLES, 2, 2, generator=g) - .5) * .25
            shift = (torch.rand(STYLES, 1, 2, generator=g) - .5) * .08
            drawn = (p - centre) @ warp.transpose(1, 2) + centre + shift        # (STYLES, k, 2)
            skipped = torch.rand(STYLES, generator=g) >= chance
            drawn[skipped] = 1e4                                                # far away: no ink
            segments.append(torch.stack([drawn[:, :-1], drawn[:, 1:]], 2))     # (STYLES, k-1, 2, 2)
        bank.append(_render(torch.cat(segments, 1), .7 + .9 * torch.rand(STYLES, generator=g)))
    return torch.stack(bank)


def _chunk(bank: torch.Tensor, seed: int, split: str, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """CHUNK images and labels: a random style per image, warped, dimmed and noised."""
    g = _generator(FORMAT, seed, split, index)
    labels = torch.randint(0, 10, (CHUNK,), generator=g)
    glyphs = bank[labels, torch.randint(0, STYLES, (CHUNK,), generator=g)].unsqueeze(1)
    u = torch.rand(CHUNK, 7, generator=g)
    angle = (u[:, 0] - .5) * math.radians(30)
    scale_x, scale_y = .85 + .3 * u[:, 1], .85 + .3 * u[:, 2]
    shear = (u[:, 3] - .5) * .5
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.stack([torch.stack([cos / scale_x, (-sin + shear) / scale_x, (u[:, 4] - .5) * .25], 1),
                         torch.stack([sin / scale_y, cos / scale_y, (u[:, 5] - .5) * .25], 1)], 1)
    grid = F.affine_grid(theta, [CHUNK, 1, SIZE, SIZE], align_corners=False)
    images = F.grid_sample(glyphs, grid, align_corners=False).squeeze(1)
    images = images * (.7 + .3 * u[:, 6]).view(-1, 1, 1) + .06 * torch.randn(images.shape, generator=g)
    return (images.clamp(0, 1) * 255).round().to(torch.uint8), labels.to(torch.uint8)


def generate(n: int, seed: int, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The first n images and labels of the split's infinite, seeded sequence."""
    bank = _style_bank(seed, split)
    parts = [_chunk(bank, seed, split, i) for i in range(-(-n // CHUNK))]
    return torch.cat([p[0] for p in parts])[:n], torch.cat([p[1] for p in parts])[:n]


def write_atomic(path: Path, payload: bytes) -> None:
    """Write through a temporary file and a rename, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(payload)
    os.replace(tmp, path)


def write_idx(raw_dir: Path, split: str, images: torch.Tensor, labels: torch.Tensor) -> None:
    """MNIST's IDX layout: big-endian magic and sizes, then the raw uint8 bytes."""
    image_file, label_file = FILES[split]
    n, rows, cols = images.shape
    write_atomic(raw_dir / image_file, struct.pack(">IIII", 0x803, n, rows, cols) + images.numpy().tobytes())
    write_atomic(raw_dir / label_file, struct.pack(">II", 0x801, n) + labels.numpy().tobytes())


def idx_problem(path: Path) -> str | None:
    """Why an IDX file cannot be MNIST data (None when its header and size agree).

    torchvision reads a truncated file as "not found", which sends users to re-download what
    they already have; checking the header first lets the error name the broken file instead."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if len(head) < 4 or head[:2] != b"\0\0" or head[2] != 0x08 or not 1 <= head[3] <= 3:
                return "not an IDX file of unsigned bytes (bad magic number)"
            dims = f.read(4 * head[3])
        if len(dims) < 4 * head[3]:
            return "truncated in its header"
        expected = 4 + len(dims) + math.prod(struct.unpack(f">{head[3]}I", dims))
        size = path.stat().st_size
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if size != expected:
        damage = "truncated" if size < expected else "trailing data"
        return f"{size} bytes where its header promises {expected} ({damage})"
    return None


def ensure(raw_dir: Path, n_train: int, n_test: int, seed: int) -> bool:
    """Make sure raw_dir holds at least n_train/n_test generated images for this seed.

    Regenerates only when the files or manifest are missing, the seed or format differ, or
    the set on disk is smaller than asked for.  Returns True when it wrote new files.  A lock
    keeps concurrent jobs sharing one data dir from writing at the same time.
    """
    raw_dir.mkdir(parents=True, exist_ok=True)
    manifest = raw_dir / "synthetic-manifest.json"
    with open(raw_dir / ".synthetic.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            have = json.loads(manifest.read_text())
        except (OSError, ValueError):
            have = {}
        present = all((raw_dir / f).is_file() for pair in FILES.values() for f in pair)
        same_set = present and have.get("format") == FORMAT and have.get("seed") == seed
        if same_set and have.get("train", 0) >= n_train and have.get("test", 0) >= n_test:
            return False
        if same_set:  # grow, never shrink: another run may still want the larger set
            n_train, n_test = max(n_train, have.get("train", 0)), max(n_test, have.get("test", 0))
        for split, n in (("train", n_train), ("test", n_test)):
            write_idx(raw_dir, split, *generate(n, seed, split))
        write_atomic(manifest, json.dumps({"format": FORMAT, "seed": seed, "train": n_train,
                                            "test": n_test}, indent=2).encode())
        return True
