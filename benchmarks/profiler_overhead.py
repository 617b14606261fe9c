"""Profiling overhead, side by side: plain epoch vs `dlkit-prof run` vs bare `kernprof -l`.

Each setting runs one epoch of lesson 1 in its own process; the variants are interleaved and
repeated, and the table gives the median epoch time (from --metrics-json) and its ratio to the
plain run. "bare kernprof" is what `dlkit-prof run` did before it stopped tracing in forked
DataLoader workers and chose the legacy tracer (see profiling/kernprof_entry.py).

On the GPU machine, from the repository root:
    python benchmarks/profiler_overhead.py --workers 1,7 --repeats 2 --out runs/overhead
A CPU smoke test:
    python benchmarks/profiler_overhead.py --workers 0,1 --repeats 1 --train-samples 512 --test-samples 256
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def variants(out: Path) -> dict[str, list[str]]:
    """Command prefix per variant; the mnist arguments are appended."""
    return {
        "plain": [sys.executable],
        "dlkit-prof run": [sys.executable, "-m", "profiling", "run", "--output-dir", str(out / "dlkit-prof"), "--"],
        "bare kernprof -l": [sys.executable, "-m", "kernprof", "-l", "-q", "--no-config",
                             "-o", str(out / "bare.lprof")],
    }


def one_epoch(prefix: list[str], mnist: list[str], metrics: Path, env: dict[str, str]) -> float:
    metrics.unlink(missing_ok=True)
    code = subprocess.run([*prefix, *mnist, "--metrics-json", str(metrics)], cwd=REPO, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(f"profiler_overhead: {' '.join(prefix[:4])} exited {code}")
    return float(json.loads(metrics.read_text())["epoch_seconds"][0])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,7", help="comma list of --num-workers")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--train-samples", type=int, default=60000)
    p.add_argument("--test-samples", type=int, default=10000)
    p.add_argument("--out", type=Path, default=REPO / "runs" / "overhead")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "LINE_PROFILER_CORE"}
    rows = []
    for w in [int(x) for x in args.workers.split(",")]:
        mnist = ["mnist_classify.py", "--synthetic", "--epochs", "1", "--num-workers", str(w),
                 "--train-samples", str(args.train_samples), "--test-samples", str(args.test_samples)]
        times: dict[str, list[float]] = {name: [] for name in variants(args.out)}
        for _ in range(args.repeats):
            for name, prefix in variants(args.out).items():
                times[name].append(one_epoch(prefix, mnist, args.out / "metrics.json", env))
        plain = statistics.median(times["plain"])
        for name, ts in times.items():
            med = statistics.median(ts)
            rows.append((w, name, med, med / plain, ", ".join(f"{t:.2f}" for t in ts)))
    print("\n| num_workers | variant | median epoch s | vs plain | runs (s) |\n|---:|---|---:|---:|---|")
    for w, name, med, ratio, runs in rows:
        print(f"| {w} | {name} | {med:.2f} | {ratio:.3f}x | {runs} |")
    print(f"\nPython {sys.version.split()[0]}; {args.repeats} repeat(s), interleaved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
