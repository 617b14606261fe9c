"""Backs docs/results.md, "Lesson 9: many small files against shards".
ResNet-18 on one GPU from the image folder and from its shards: local disk or sshfs, cold or
warm page cache, JPEGs decoded by the loader's workers (--decode cpu) or on the GPU (--decode gpu).

Why: lesson 09 (many small files) claims that once decoding leaves the CPUs, the file layout
decides whether the GPU is busy. Each row is one run of small_files/train.py for one epoch, after --warmup-steps untimed
steps; its images/s and data wait come from the trainer's metrics, and the GPU utilisation from
NVML sampled every 50 ms (profiling.sampling.Sampler) and averaged over the timed epoch only (the
trainer writes the epoch's wall-clock start and end). Cold = the source evicted from the page
cache just before (and, over sshfs, a fresh mount); warm = the run right after the cold one.

    python benchmarks/small_files_gpu.py --root /tmp/sf --out-dir $OUT/table -- --batch-size 256 --amp --channels-last

`--io-samples N` adds 1-worker read rates (bytes only) of the folder and the shards, both readers.
The data is generated under --root first if missing (50,000 JPEGs, 160 px; 16 cores: ~5 s).
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.cpu_by_process import CoreSampler
from profiling.sampling import Sampler
from small_files import cache, remote, shards
from small_files.generate import generate
from small_files.measure import read_rate

REPO = Path(__file__).resolve().parents[1]
SAMPLE_EVERY = 0.05  # 20 Hz


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--root", type=Path, default=Path("data/small-files"))
    p.add_argument("--train", type=int, default=50_000)
    p.add_argument("--per-shard", type=int, default=1024)
    p.add_argument("--workers", type=int, default=None, help="default: CPUs minus 2")
    p.add_argument("--sources", default="folder,shards", help="any of folder, shards, tiled (shards of --tile sheets)")
    p.add_argument("--tile", type=int, default=4, help="for the tiled source: T x T images a sheet")
    p.add_argument("--places", default="local,sshfs")
    p.add_argument("--decodes", default="gpu,cpu")
    p.add_argument("--caches", default="cold,warm")
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--io-samples", type=int, default=0, help="also time 1-worker reads of N samples (0: no)")
    p.add_argument("--decode-batches", type=int, default=0,
                   help="also time decoding alone on the GPU: N batches, then decoding with the augmentation")
    p.add_argument("--sshfs-options", default="", help="more sshfs -o options, e.g. Ciphers=aes128-gcm@openssh.com")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("train_args", nargs="*", help="more small_files/train.py flags, after --",
                   default=["--batch-size", "256", "--amp", "--channels-last"])
    return p.parse_args()


def gpu_trace(rows: list[tuple], wall0: float, start: float, end: float) -> list[list[float]]:
    """gpu0's NVML utilisation samples over [start, end] (wall clock): [seconds into the epoch, %]."""
    return [[round(wall0 + r[0] - start, 3), r[2]] for r in rows
            if r[1] == "gpu0" and start <= wall0 + r[0] <= end and not math.isnan(r[2])]


def gpu_busy(trace: list[list[float]]) -> tuple[float | None, int]:
    """Mean utilisation of a trace and its number of samples."""
    return (sum(u for _, u in trace) / len(trace) if trace else None), len(trace)


def train_once(data: Path, decode: str, workers: int, args: argparse.Namespace, log: Path) -> dict:
    """One epoch of small_files/train.py, with NVML sampled beside it."""
    metrics = log.with_suffix(".json")
    cmd = [sys.executable, "small_files/train.py", "--data", str(data), "--decode", decode,
           "--num-workers", str(workers), "--no-test", "--epochs", "1", "--warmup-steps", str(args.warmup_steps),
           "--metrics-json", str(metrics), *args.train_args]
    with open(log, "w") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        child = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        sampler, cores = Sampler(child.pid, interval=SAMPLE_EVERY), CoreSampler(child.pid)
        wall0 = time.time()
        with sampler, cores:
            code = child.wait()
    if code != 0 or not metrics.is_file():
        return {"error": f"exit {code}; see {log.name}"}
    m = json.loads(metrics.read_text())
    start, end = m["epoch_clock"][0]
    trace = gpu_trace(sampler.rows, wall0, start, end)
    util, n = gpu_busy(trace)
    share = m["settings"].get("gpu_decode_share", 1.0)
    return {"decode": decode if decode == "cpu" or share == 1 else f"gpu, nvJPEG {100 * share:.0f} %",
            "images": m["train_images"], "seconds": m["train_seconds"], "images_per_s": m["images_per_sec"],
            "data_wait_pct": 100 * m["data_wait_fraction"],
            "loader_wait_pct": 100 * m["loader_wait_seconds"] / m["train_seconds"],
            "gpu_util_pct": util, "gpu_samples": n, "cores": cores.cores(start, end),
            "tile": m["settings"].get("tile", 1), "decode_threads": m["settings"].get("gpu_decode_threads", 1),
            "gpu_trace": trace}


@contextlib.contextmanager
def place(path: Path, where: str, options: str = ""):
    """The path as the trainer sees it: itself, or a fresh sshfs mount of it."""
    if where == "local":
        yield path
    else:
        with remote.sshfs_mount(path, options) as mount:
            yield mount


def io_rows(sources: dict[str, Path], args: argparse.Namespace) -> list[dict]:
    """1-worker read rates (bytes only), cold over sshfs and on local disk, then warm on local disk."""
    rows = []
    readers = [("folder", "index"), ("shards", "index"), ("shards", "webdataset")]
    for where, state in (("sshfs", "cold"), ("local", "cold"), ("local", "warm")):
        for name, reader in readers:
            if state == "cold":
                cache.evict(sources[name])
            with place(sources[name], where) as path:
                r = read_rate(path, 1, args.io_samples, reader=reader)
            rows.append({"place": where, "cache": state, "source": name, "reader": reader, "workers": 1, **r})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def decode_rates(shard_dir: Path, batches: int, batch_size: int = 256) -> dict:
    """Images/s of nvJPEG alone and of nvJPEG + crop + flip + normalise, on the main thread, synchronised."""
    import torch

    from small_files.gpu_batch import GpuBatches, decode, pack
    from small_files.shardread import ShardBatches
    packed = list(itertools.islice(iter(ShardBatches(shard_dir, batch_size, pack)), batches))
    device = torch.device("cuda")
    gpu = GpuBatches(packed, device, 128, seed=0)
    gpu.warm_up(batch_size)
    rates = {}
    for name, work in (("decode", lambda p: decode(p[0], p[1], device)), ("decode_augment", gpu.batch)):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for p in packed:
            work(p)
        torch.cuda.synchronize()
        rates[f"{name}_images_per_s"] = batches * batch_size / (time.perf_counter() - t0)
    return {"batch_size": batch_size, "batches": batches, **rates}


def table(rows: list[dict]) -> str:
    lines = ["| source | place | cache | decode | images/s | data wait | of it, waiting for workers | GPU busy "
             "(NVML, 20 Hz) | samples |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['source']} | {r['place']} | {r['cache']} | {r['decode']} | {r['error']} |||||")
            continue
        util = "n/a" if r["gpu_util_pct"] is None else f"{r['gpu_util_pct']:.0f} %"
        lines.append(f"| {r['source']} | {r['place']} | {r['cache']} | {r['decode']} | {r['images_per_s']:.0f} | "
                     f"{r['data_wait_pct']:.0f} % | {r['loader_wait_pct']:.0f} % | {util} | {r['gpu_samples']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    args = parse_args()
    workers = args.workers if args.workers is not None else max(len(os.sched_getaffinity(0)) - 2, 0)
    if not (args.root / "train").is_dir():
        t0 = time.perf_counter()
        generate(args.root, train=args.train, val=1_000)
        print(f"generated {args.train} images in {time.perf_counter() - t0:.0f} s", flush=True)
    shard_dir = args.root / f"shards-{args.per_shard}"
    wanted = set(args.sources.split(","))
    if not shards.is_shard_dir(shard_dir) and ("shards" in wanted or args.decode_batches or args.io_samples):
        t0 = time.perf_counter()
        shards.write_shards(args.root / "train", shard_dir, args.per_shard, seed=1)
        print(f"sharded in {time.perf_counter() - t0:.0f} s", flush=True)
    sources = {"folder": args.root / "train", "shards": shard_dir}
    if "tiled" in wanted:
        sources["tiled"] = args.root / f"shards-{args.per_shard}-tile{args.tile}"
        if not shards.is_shard_dir(sources["tiled"]):
            t0 = time.perf_counter()
            shards.write_shards(args.root / "train", sources["tiled"], args.per_shard, seed=1, tile=args.tile)
            print(f"tiled ({args.tile} x {args.tile}) in {time.perf_counter() - t0:.0f} s", flush=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.decode_batches:
        rates = decode_rates(shard_dir, args.decode_batches)
        print(json.dumps(rates), flush=True)
        (args.out_dir / "decode.json").write_text(json.dumps(rates) + "\n")
    if args.io_samples:
        (args.out_dir / "io.jsonl").write_text("".join(json.dumps(r) + "\n" for r in io_rows(sources, args)))
    rows = []
    for where, decode, source in itertools.product(args.places.split(","), args.decodes.split(","),
                                                   args.sources.split(",")):
        for state in args.caches.split(","):
            if state == "cold":
                cache.evict(sources[source])
            name = f"{source}-{where}-{state}-{decode}"
            t0 = time.perf_counter()
            try:
                with place(sources[source], where, args.sshfs_options) as path:
                    result = train_once(path, decode, workers, args, args.out_dir / f"{name}.log")
            except (remote.SshfsUnavailable, OSError) as exc:
                result = {"error": str(exc).splitlines()[-1][:120]}
            row = {"source": source, "place": where, "cache": state, "decode": decode, "workers": workers, **result,
                   "wall_s": time.perf_counter() - t0}
            print(json.dumps(row), flush=True)
            rows.append(row)
            (args.out_dir / "rows.json").write_text(json.dumps(rows, indent=1) + "\n")  # kept if a limit stops us
            (args.out_dir / "table.md").write_text(table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
