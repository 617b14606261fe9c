"""Backs docs/results.md, "Profiling overhead".
Profiling overhead, side by side: plain epoch vs `dlkit-prof run` vs bare `kernprof -l`.

Each setting runs one epoch of lesson 1 in its own process; the variants are interleaved and
repeated, and the table gives the median epoch time (from --metrics-json) and its ratio to the
plain run. "bare kernprof" is what `dlkit-prof run` did before it stopped tracing in forked
DataLoader workers and chose the legacy tracer (see profiling/kernprof_entry.py). "dlkit-prof run,
unmodified" profiles a copy of the script with its `@profile` line removed, so that `run` uses
line_profiler's auto-profiling of the whole script (`kernprof -p`), as for a user's own script.

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


UNMODIFIED = "dlkit-prof run, unmodified"


def variants(out: Path, bare: bool = True) -> dict[str, list[str]]:
    """Command prefix per variant; the mnist arguments are appended."""
    found = {
        "plain": [sys.executable],
        "dlkit-prof run": [sys.executable, "-m", "profiling", "run", "--output-dir", str(out / "dlkit-prof"), "--"],
        UNMODIFIED: [sys.executable, "-m", "profiling", "run", "--output-dir", str(out / "auto"), "--"],
        "bare kernprof -l": [sys.executable, "-m", "kernprof", "-l", "-q", "--no-config",
                             "-o", str(out / "bare.lprof")],
    }
    if not bare:
        del found["bare kernprof -l"]
    return found


def unmodified_copy(out: Path) -> Path:
    """mnist_classify.py without its `@profile` line: what a user's own script looks like."""
    source = (REPO / "mnist_classify.py").read_text(encoding="utf-8")
    copy = out / "mnist_unmodified.py"
    copy.write_text("\n".join(line for line in source.splitlines() if line.strip() != "@profile") + "\n")
    return copy


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
    p.add_argument("--no-bare", action="store_true", help="leave out the bare kernprof variant (saves time)")
    args = p.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "LINE_PROFILER_CORE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))  # for the copy
    copy = unmodified_copy(args.out)
    rows = []
    for w in [int(x) for x in args.workers.split(",")]:
        mnist = ["mnist_classify.py", "--synthetic", "--epochs", "1", "--num-workers", str(w),
                 "--train-samples", str(args.train_samples), "--test-samples", str(args.test_samples)]
        chosen = variants(args.out, bare=not args.no_bare)
        times: dict[str, list[float]] = {name: [] for name in chosen}
        for _ in range(args.repeats):
            for name, prefix in chosen.items():
                script = [str(copy)] if name == UNMODIFIED else mnist[:1]
                times[name].append(one_epoch(prefix, script + mnist[1:], args.out / "metrics.json", env))
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
