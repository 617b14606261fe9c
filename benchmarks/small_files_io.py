"""Backs docs/results.md, "Lesson 9: many small files against shards".
Many small files against grouped shards: samples/s of one DataLoader pass, side by side.

Why: lesson 09 claims that grouping files into shards matters most where every open is a round
trip (a network file system, here sshfs over loopback) and the page cache is cold. This script
measures, in one run and at the same number of workers, the image folder and its shards of
1, 4, 64 and 1,024 samples, read:

  sshfs cold   fresh sshfs mount of the folder (empty sshfs/FUSE caches) + served files evicted
  local cold   the files evicted from the page cache with vmtouch -e
  local warm   the same pass again, from the page cache

The sources are interleaved within each condition, so a change in the machine's load hits all of
them. `bytes` rows hand over the file's bytes (the storage's share); `decoded` rows add the
training transform (JPEG decode, random crop to --image-size, tensor, normalise).

    python benchmarks/small_files_io.py --out-dir docs/results/small-files-io      # ~10 min on 2 cores

The first run generates data/small-files (50,000 training JPEGs) and its shards.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from small_files import cache, remote, shards
from small_files.generate import generate
from small_files.measure import read_rate

CONDITIONS = ("sshfs cold", "local cold", "local warm")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--root", type=Path, default=Path("data/small-files"), help="generated here if missing")
    p.add_argument("--train", type=int, default=50_000, help="images in the generated training folder")
    p.add_argument("--per-shard", default="1,4,64,1024", help="shard sizes to compare with the folder")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers, the same for every source")
    p.add_argument("--samples", type=int, default=20_000, help="samples read per measurement (bytes rows)")
    p.add_argument("--decoded-samples", type=int, default=3_000, help="samples per decoded row (0: none)")
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--readers", default="index,webdataset",
                   help="how to read the shards: the kit's indexed reader and/or WebDataset's tar reader")
    p.add_argument("--out-dir", type=Path, required=True, help="raw.jsonl, table.md and machine.json go here")
    return p.parse_args()


def prepare(root: Path, train: int, sizes: list[int], readers: list[str]) -> dict[str, tuple[Path, str]]:
    folder = root / "train"
    if not folder.is_dir():
        print(f"generating {train} images under {root} ...", flush=True)
        generate(root, train=train, val=1_000)
    sources = {"folder": (folder, "index")}
    for n in sizes:
        out = root / f"shards-{n}"
        if not shards.is_shard_dir(out) or shards.read_index(out)["per_shard"] != n:
            t0 = time.perf_counter()
            shards.write_shards(folder, out, n, seed=1)
            print(f"sharded {folder} into {out} ({n} a shard) in {time.perf_counter() - t0:.0f} s", flush=True)
        for reader in readers:
            sources[f"shards-{n}" + ("" if reader == "index" else f" ({reader})")] = (out, reader)
    return sources


def machine() -> dict:
    return {"host": platform.node(), "cpus": len(os.sched_getaffinity(0)), "cpu": _cpu_model(),
            "load_average": os.getloadavg(), "python": platform.python_version(), "kernel": platform.release()}


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def measure(condition: str, source: Path, reader: str, args: argparse.Namespace, decode: bool) -> dict:
    samples = args.decoded_samples if decode else args.samples
    if condition == "local warm":
        read_rate(source, args.workers, samples, decode=False)  # fill the cache with what is read next
        return read_rate(source, args.workers, samples, decode, image_size=args.image_size, reader=reader)
    cache.evict(source)
    if condition == "local cold":
        return read_rate(source, args.workers, samples, decode, image_size=args.image_size, reader=reader)
    with remote.sshfs_mount(source) as mount:
        return read_rate(mount, args.workers, samples, decode, image_size=args.image_size, reader=reader)


def table(rows: list[dict]) -> str:
    lines = ["| condition | what | source | samples | seconds | samples/s | MB/s | vs folder |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        base = next(x for x in rows if x["condition"] == r["condition"] and x["what"] == r["what"]
                    and x["source"] == "folder")
        lines.append(f"| {r['condition']} | {r['what']} | {r['source']} | {r['samples']} | {r['seconds']:.2f} | "
                     f"{r['samples_per_s']:.0f} | {r['mb_per_s']:.1f} | "
                     f"{r['samples_per_s'] / base['samples_per_s']:.1f}x |")
    return "\n".join(lines) + "\n"


def main() -> int:
    args = parse_args()
    sizes = [int(x) for x in args.per_shard.split(",")]
    sources = prepare(args.root, args.train, sizes, args.readers.split(","))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    before = machine()
    rows = []
    plan = [(c, "bytes") for c in CONDITIONS]
    if args.decoded_samples:
        plan += [("sshfs cold", "decoded"), ("local warm", "decoded")]
    with open(args.out_dir / "raw.jsonl", "w") as raw:
        for condition, what in plan:
            for name, (path, reader) in sources.items():
                if what == "decoded" and name not in ("folder", f"shards-{max(sizes)}"):
                    continue
                row = {"condition": condition, "what": what, "source": name, "workers": args.workers,
                       **measure(condition, path, reader, args, what == "decoded"),
                       "load_average_1min": os.getloadavg()[0]}
                print(json.dumps(row), flush=True)
                raw.write(json.dumps(row) + "\n")
                rows.append(row)
    after = machine()
    (args.out_dir / "machine.json").write_text(json.dumps({"before": before, "after": after, "argv": sys.argv,
                                                           "workers": args.workers}, indent=1) + "\n")
    (args.out_dir / "table.md").write_text(table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
