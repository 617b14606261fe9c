"""Lesson 1's data: MNIST from disk (real, downloaded, or generated offline), cut to size.

The lesson script (mnist_classify.py) builds its DataLoaders from these datasets; the DDP script,
the GPU-resident path and the benchmarks load the digits the same way, so every lesson trains on
the same images in the same seeded order.
"""
from __future__ import annotations

import argparse
from typing import Sized

import torch
from torch.utils.data import Dataset, RandomSampler, Subset
from torchvision import datasets, transforms

from digits import synthetic

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
FULL_TRAIN, FULL_TEST = 60_000, 10_000


class SetupError(RuntimeError):
    """A problem with the data or the device that the user fixes with a flag: one line, exit 2."""


# --augment heavy: per-image work on PIL images in the loader's workers, about 4x the cost of
# ToTensor + Normalize alone (timed one thread per process on a 2-core machine: 90 ms -> 280 ms for 64
# images with the warp and the jitter), so the loader's cost is no longer MNIST's.
HEAVY_AUGMENTATION = (
    transforms.RandomAffine(degrees=15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=10),
    transforms.ColorJitter(brightness=0.4, contrast=0.4),
    transforms.RandomResizedCrop(28, scale=(0.8, 1.0), antialias=True),
)


def data_source(args: argparse.Namespace) -> str:
    """Where the digits come from, in words, for the run context."""
    if args.synthetic:
        return f"synthetic digits (seed {args.synthetic_seed}) in {args.data_dir / 'synthetic' / 'MNIST' / 'raw'}"
    return f"MNIST in {args.data_dir / 'MNIST' / 'raw'}" + (" (download if missing)" if args.download else "")


def _first(ds: Dataset, n: int | None, what: str) -> Dataset:
    if n is None or n == len(ds):
        return ds
    if n > len(ds):
        raise SetupError(f"--{what}-samples {n} is more than the {len(ds)} images available")
    return Subset(ds, range(n))


def load_datasets(args: argparse.Namespace) -> tuple[Dataset, Dataset]:
    """MNIST (real, or generated with --synthetic) as torchvision datasets, cut to --train/--test-samples."""
    root = args.data_dir
    if root.exists() and not root.is_dir():
        raise SetupError(f"--data-dir {root} is a file, not a folder")
    if args.synthetic:
        root = args.data_dir / "synthetic"
        try:
            synthetic.ensure(root / "MNIST" / "raw", args.train_samples or FULL_TRAIN,
                             args.test_samples or FULL_TEST, args.synthetic_seed)
        except OSError as exc:
            raise SetupError(f"cannot write the generated digits under {root}: {exc.strerror or exc}") from None
    elif args.download:
        try:
            datasets.MNIST(root, train=True, download=True)
            datasets.MNIST(root, train=False, download=True)
        except Exception as exc:  # URLError, HTTP errors, checksum failures: all mean "no data"
            raise SetupError(f"could not download MNIST into {root} ({type(exc).__name__}); "
                             "run this on a machine with internet, or use --synthetic") from None
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((MNIST_MEAN,), (MNIST_STD,))])
    train_transform = transforms.Compose([*HEAVY_AUGMENTATION, transform]) if args.augment == "heavy" else transform
    raw = root / "MNIST" / "raw"
    for name in (n for pair in synthetic.FILES.values() for n in pair):
        problem = (raw / name).exists() and synthetic.idx_problem(raw / name)
        if problem:
            cure = ("run again to regenerate it" if args.synthetic
                    else "fetch it again (--download, or --synthetic for generated digits)")
            raise SetupError(f"{raw / name} is corrupt: {problem}; delete it and {cure}")
    try:
        train_ds = datasets.MNIST(root, train=True, transform=train_transform)
        test_ds = datasets.MNIST(root, train=False, transform=transform)
    except RuntimeError:
        raise SetupError(f"MNIST not found in {root / 'MNIST' / 'raw'}: run once with --download "
                         "(needs internet, e.g. on a login node) or add --synthetic for offline digits") from None
    return _first(train_ds, args.train_samples, "train"), _first(test_ds, args.test_samples, "test")


def shuffled(data: Sized, seed: int) -> RandomSampler:
    """The training order: the same seeded sampler drives both data paths, so on the CPU the
    DataLoader and --gpu-resident runs see identical batches (and identical results)."""
    return RandomSampler(data, generator=torch.Generator().manual_seed(seed))
