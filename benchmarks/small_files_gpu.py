"""ResNet-18 from the image folder against its shards on one GPU, local disk, cold and warm cache.

Why: lesson 09 says shards keep a GPU busy where many small files do not. This runs
image_classify.py under `python -m profiling run --sample-gpu` four times (folder cold, folder
warm, shards cold, shards warm; cold = page cache evicted just before) and tabulates images/s,
the data-wait share of the training loop, and the GPU utilisation that NVML sampled about once
a second (mean over the samples from the first to the last non-zero one, i.e. the training
window without start-up).

    python benchmarks/small_files_gpu.py --out-dir $OUT/small-files-gpu       # on a GPU node

The data is generated under --root first if missing (50,000 JPEGs, 160 px; 16 cores: ~1 min).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from small_files import cache, shards
from small_files.generate import generate

REPO = Path(__file__).resolve().parents[1]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--root", type=Path, default=Path("data/small-files"))
    p.add_argument("--train", type=int, default=50_000)
    p.add_argument("--per-shard", type=int, default=1024, help="the shard size to compare with the folder")
    p.add_argument("--workers", type=int, default=None, help="default: CPUs minus 2 (see tuned.sbatch)")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--runs", default="folder-cold,folder-warm,shards-cold,shards-warm")
    p.add_argument("train_args", nargs="*", help="extra image_classify.py flags, after --",
                   default=["--batch-size", "256", "--amp", "--channels-last", "--epochs", "1"])
    return p.parse_args()


def gpu_busy(samples_csv: Path) -> tuple[float | None, int]:
    """Mean GPU utilisation over the training window and the number of samples in it."""
    if not samples_csv.is_file():
        return None, 0
    util = [float(r["util_pct"]) for r in csv.DictReader(samples_csv.open())
            if r.get("device") != "cpu" and r.get("util_pct") not in (None, "")]
    busy = [i for i, u in enumerate(util) if u > 0]
    if not busy:
        return None, 0
    window = util[busy[0]:busy[-1] + 1]
    return sum(window) / len(window), len(window)


def main() -> int:
    args = parse_args()
    cpus = len(os.sched_getaffinity(0))
    workers = args.workers if args.workers is not None else max(cpus - 2, 0)
    if not (args.root / "train").is_dir():
        t0 = time.perf_counter()
        generate(args.root, train=args.train, val=0)
        print(f"generated {args.train} images in {time.perf_counter() - t0:.0f} s", flush=True)
    shard_dir = args.root / f"shards-{args.per_shard}"
    if not shards.is_shard_dir(shard_dir):
        t0 = time.perf_counter()
        shards.write_shards(args.root / "train", shard_dir, args.per_shard, seed=1)
        print(f"sharded in {time.perf_counter() - t0:.0f} s", flush=True)
    sources = {"folder": args.root / "train", "shards": shard_dir}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for run in args.runs.split(","):
        source, state = run.split("-")
        method = cache.evict(sources[source]) if state == "cold" else "none"
        out = args.out_dir / run
        metrics = out / "metrics.json"
        cmd = [sys.executable, "-m", "profiling", "run", "--sample-gpu", "--output-dir", str(out), "--",
               "image_classify.py", "--data", str(sources[source]), "--num-workers", str(workers),
               "--persistent-workers", "--no-test", "--metrics-json", str(metrics), *args.train_args]
        print("$ " + " ".join(cmd), flush=True)
        with open(args.out_dir / f"{run}.log", "w") as log:
            code = subprocess.run(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        if code != 0 or not metrics.is_file():
            print(f"{run}: exit {code}; see {args.out_dir / f'{run}.log'}", flush=True)
            continue
        m = json.loads(metrics.read_text())
        util, n = gpu_busy(out / "image_classify.samples.csv")
        row = {"run": run, "evicted_with": method, "workers": workers, "images": m["train_images"],
               "seconds": m["train_seconds"], "images_per_s": m["images_per_sec"],
               "data_wait_pct": 100 * m["data_wait_fraction"], "gpu_util_pct": util, "gpu_samples": n}
        print(json.dumps(row), flush=True)
        rows.append(row)
    lines = ["| run | workers | images | seconds | images/s | data wait | GPU busy (NVML, mean) | samples |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        util = "n/a" if r["gpu_util_pct"] is None else f"{r['gpu_util_pct']:.0f} %"
        lines.append(f"| {r['run']} | {r['workers']} | {r['images']} | {r['seconds']:.1f} | {r['images_per_s']:.0f} | "
                     f"{r['data_wait_pct']:.0f} % | {util} | {r['gpu_samples']} |")
    (args.out_dir / "table.md").write_text("\n".join(lines) + "\n")
    (args.out_dir / "rows.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
