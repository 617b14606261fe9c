"""Real MNIST digits offline: split the kit's t10k files into a train/test set.

The GPU machines and CI have no internet, and the generated digits are too easy to show an
accuracy loss, so accuracy claims use MNIST's 10,000 real test digits, which ship with the kit
(digits/mnist-t10k/, MNIST's own gzipped IDX files; see the README there). This writes the first
8,000 as `train-*` and the last 2,000 as `t10k-*` IDX files under OUT/MNIST/raw/, the layout that
`mnist_classify.py --data-dir OUT` (torchvision's MNIST) reads:

    python -m digits.real --out data/real              # then
    python mnist_classify.py --data-dir data/real

Where the files are missing (an install without them) and the machine is online, they are fetched
with torchvision's own MNIST mirrors and checksums. On a cluster with internet,
`mnist_classify.py --download` stays the way to the full 60k/10k set.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import sys
from pathlib import Path

DEFAULT_SOURCE = Path(__file__).resolve().parent / "mnist-t10k"   # shipped with the kit
FETCHED = Path.home() / ".cache" / "slurm-dl-kit" / "mnist-t10k"  # where a missing copy is fetched to
ENV_VAR = "MNIST_T10K"  # overrides DEFAULT_SOURCE
IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
MD5 = {IMAGES: "9fb629c4189551a2d022fa330f9573f3", LABELS: "ec29112dd5afa0611ce80d1b7f02629c"}
TOTAL, TRAIN, TEST = 10_000, 8_000, 2_000
IMAGE_BYTES, HEADER = {IMAGES: 28 * 28, LABELS: 1}, {IMAGES: 16, LABELS: 8}


class SplitError(RuntimeError):
    """Missing or damaged source files, or a split that does not fit: one line, exit 2."""


def source_dir() -> Path:
    """Where the t10k files are: $MNIST_T10K, else the copy shipped in digits/mnist-t10k/."""
    return Path(os.environ[ENV_VAR]) if os.environ.get(ENV_VAR) else DEFAULT_SOURCE


def fetch(target: Path = FETCHED) -> Path:
    """Download the two t10k files with torchvision's MNIST mirrors and md5 sums (no internet: SplitError)."""
    from torchvision.datasets import MNIST
    from torchvision.datasets.utils import download_url

    md5 = dict(MNIST.resources)
    for name in (IMAGES, LABELS):
        if (target / name).is_file():
            continue
        for mirror in MNIST.mirrors:
            try:
                download_url(mirror + name, str(target), filename=name, md5=md5[name])
                break
            except Exception:  # noqa: BLE001 - any mirror's failure means: try the next one
                continue
        else:
            raise SplitError(f"{name} is not in {DEFAULT_SOURCE} and could not be downloaded (offline?): "
                             f"point ${ENV_VAR} at a folder with MNIST's t10k files")
    return target


def available_source() -> Path:
    """The folder to read: $MNIST_T10K or the shipped copy when present, else a fetched copy."""
    src = source_dir()
    if os.environ.get(ENV_VAR) or (src / IMAGES).is_file():
        return src
    return fetch()


def _read_checked(src: Path, name: str) -> bytes:
    path = src / name
    try:
        packed = path.read_bytes()
    except OSError:
        raise SplitError(f"{path} not found: point ${ENV_VAR} at the folder with MNIST's t10k files") from None
    if hashlib.md5(packed).hexdigest() != MD5[name]:
        raise SplitError(f"{path} is not MNIST's file (md5 differs); refusing to train on it")
    return gzip.decompress(packed)


def _idx_slice(raw: bytes, name: str, start: int, stop: int) -> bytes:
    """The same IDX file holding items start..stop-1: a new count in the header, the items' bytes."""
    header, size = HEADER[name], IMAGE_BYTES[name]
    count = (stop - start).to_bytes(4, "big")
    return raw[:4] + count + raw[8:header] + raw[header + start * size: header + stop * size]


def write_split(out: Path, src: Path | None = None, train: int = TRAIN, test: int = TEST) -> Path:
    """Write the first `train` digits as MNIST's training files and the last `test` as its test files.

    Returns the raw folder. Rewrites nothing when the files already hold this split.
    """
    if train < 1 or test < 1 or train + test > TOTAL:
        raise SplitError(f"--train {train} and --test {test} must be at least 1 and add up to at most {TOTAL}")
    src = available_source() if src is None else src
    raw_dir = out / "MNIST" / "raw"
    files = {}
    for name in (IMAGES, LABELS):
        data = _read_checked(src, name)
        kind = name.split("-")[1]  # images / labels
        suffix = "idx3-ubyte" if kind == "images" else "idx1-ubyte"
        files[f"train-{kind}-{suffix}"] = _idx_slice(data, name, 0, train)
        files[f"t10k-{kind}-{suffix}"] = _idx_slice(data, name, TOTAL - test, TOTAL)
    try:
        raw_dir.mkdir(parents=True, exist_ok=True)
        for fname, payload in files.items():
            target = raw_dir / fname
            if target.exists() and target.read_bytes() == payload:
                continue
            tmp = target.with_name(fname + f".tmp{os.getpid()}")
            tmp.write_bytes(payload)
            os.replace(tmp, target)
    except OSError as exc:
        raise SplitError(f"cannot write the split under {raw_dir}: {exc.strerror or exc}") from None
    return raw_dir


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("data/real"),
                   help="folder to pass as mnist_classify.py --data-dir (the files go to OUT/MNIST/raw)")
    p.add_argument("--source", type=Path, default=None,
                   help=f"folder with {IMAGES} and {LABELS} (default: ${ENV_VAR}, else the kit's digits/mnist-t10k)")
    p.add_argument("--train", type=int, default=TRAIN, help="train on the first N digits")
    p.add_argument("--test", type=int, default=TEST, help="test on the last N digits")
    args = p.parse_args(argv)
    try:
        raw_dir = write_split(args.out, args.source, args.train, args.test)
    except SplitError as exc:
        print(f"digits.real: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.train} training and {args.test} test digits to {raw_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
