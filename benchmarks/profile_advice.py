"""Backs docs/results.md, "Lessons 2 and 3: the profiler's advice against a sweep".
Check the profiler's num_workers advice against a measured sweep, and measure its overhead.

For the lead's GPU run (16 cores, one H100), from the repository root:

    python benchmarks/profile_advice.py --out runs/profile_advice

Steps (each prints what it does and how long it took):
  0. warm-up: generate the synthetic 60k set once (not timed as part of any result);
  1. profile one epoch at --num-workers 1 with `python -m profiling run --sample-gpu`; record the advice;
  2. sweep num_workers over 0,1,2,4,6,8,12,16 (one epoch each; the advised value is added if missing);
  3. say whether the advised setting's epoch time is within 10 % of the best epoch time;
  4. profiling overhead: a profiled epoch against an unprofiled one at the same setting and on the same
     CPUs, side by side (at the profiled setting and at the advised one).
The sweep pins each run to W + 1 CPUs (what `--cpus-per-task=W+1` gives); steps 1 and 4 see every CPU,
so the advice is capped by the node, not by a small allocation.
Writes summary.md and summary.json under --out and prints the summary. `--quick` runs tiny settings
(a smoke test for a CPU machine). Exits 0 when all steps ran (whether or not the goal was met), 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from profiling.report import build_report
from profiling.cpu_rule import first_cpus

REPO = Path(__file__).resolve().parents[1]
GOAL_RATIO = 1.10     # advised epoch time within 10 % of the best
OVERHEAD_GOAL = 1.05  # profiled epoch at most 5 % slower


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/profile_advice"))
    p.add_argument("--workers", default="0,1,2,4,6,8,12,16")
    p.add_argument("--profile-workers", type=int, default=1, help="the setting profiled in step 1")
    p.add_argument("--train-samples", type=int, default=60_000)
    p.add_argument("--test-samples", type=int, default=10_000)
    p.add_argument("--data-dir", type=Path, default=Path("data"))
    p.add_argument("--extra", default="", help="more mnist_classify.py arguments, one string")
    p.add_argument("--quick", action="store_true", help="tiny CPU smoke test: 512 images, workers 0,1")
    args = p.parse_args(argv)
    if args.quick:
        args.workers, args.train_samples, args.test_samples = "0,1", 512, 256
    return args


def mnist_args(args: argparse.Namespace) -> list[str]:
    return [str(REPO / "mnist_classify.py"), "--synthetic", "--epochs", "1", "--data-dir", str(args.data_dir.resolve()),
            "--train-samples", str(args.train_samples), "--test-samples", str(args.test_samples),
            *args.extra.split()]


def known_workloads(parser: argparse.ArgumentParser, names: str, known: Iterable[str]) -> list[str]:
    """The comma-separated workload names, each one of `known`; else the parser's one-line error (exit 2)."""
    chosen, known = names.split(","), list(known)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return chosen


def step(title: str, command: list[str], log: Path, ok_codes: tuple[int, ...] = (0,)) -> float:
    """Run one command with its output in `log`; fail loudly (with the log's tail) if it fails."""
    print(f"\n== {title}\n   $ {' '.join(command)}", flush=True)
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as fh:
        code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO).returncode
    took = time.monotonic() - start
    print(f"   took {took:.1f} s (exit {code}; log {log})", flush=True)
    if code not in ok_codes:
        print("".join(log.read_text(encoding="utf-8").splitlines(keepends=True)[-25:]), file=sys.stderr)
        raise SystemExit(f"{title} failed with exit code {code}")
    return took


def epoch_seconds(metrics: Path) -> float:
    data = json.loads(metrics.read_text(encoding="utf-8"))
    return float(data["epoch_seconds"][0])


def profiled_epoch(args: argparse.Namespace, workers: int, folder: Path, title: str) -> tuple[Path, float]:
    """`python -m profiling run` for one epoch at `workers`; returns (.lprof, its epoch seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    metrics = folder / "metrics.json"
    step(title, [sys.executable, "-m", "profiling", "run", "--output-dir", str(folder), "--sample-gpu", "--",
                 *mnist_args(args), "--num-workers", str(workers), "--metrics-json", str(metrics)],
         folder / "run.log")
    return folder / "mnist_classify.lprof", epoch_seconds(metrics)


def plain_epoch(args: argparse.Namespace, workers: int, folder: Path, title: str) -> float:
    """The same epoch without the profiler, on the same CPUs as the profiled one (all of them)."""
    folder.mkdir(parents=True, exist_ok=True)
    metrics = folder / "metrics.json"
    step(title, [sys.executable, *mnist_args(args), "--num-workers", str(workers), "--metrics-json", str(metrics)],
         folder / "run.log")
    return epoch_seconds(metrics)


def pinned_epoch(args: argparse.Namespace, workers: int, cpus: int, folder: Path, title: str) -> float:
    """One unprofiled epoch held to `cpus` CPUs, as `--cpus-per-task=cpus` would hold it."""
    folder.mkdir(parents=True, exist_ok=True)
    metrics = folder / "metrics.json"
    allowed = first_cpus(cpus)
    command = [sys.executable, *mnist_args(args), "--num-workers", str(workers), "--metrics-json", str(metrics)]
    print(f"\n== {title}\n   $ taskset ({len(allowed)} CPUs) {' '.join(command)}", flush=True)
    with (folder / "run.log").open("w", encoding="utf-8") as fh:
        code = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO,
                              env={**os.environ, "SLURM_CPUS_PER_TASK": str(len(allowed))},
                              preexec_fn=lambda: os.sched_setaffinity(0, allowed)).returncode
    if code != 0:
        raise SystemExit(f"{title} failed with exit code {code}; see {folder / 'run.log'}")
    return epoch_seconds(metrics)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    step("0. warm-up: generate the data set once", [sys.executable, *mnist_args(args), "--num-workers", "0",
                                                     "--max-steps", "1"], out / "warmup.log")

    lprof, prof_epoch = profiled_epoch(args, args.profile_workers, out / "profile",
                                       f"1. profile one epoch at --num-workers {args.profile_workers}")
    advice = build_report(lprof).advice
    print(f"   advice: num_workers={advice.num_workers}, --cpus-per-task={advice.cpus_per_task}")
    for reason in advice.reasons:
        print(f"     - {reason}")

    step(f"2. sweep num_workers over {args.workers}",
         [sys.executable, "-m", "profiling", "sweep", "--workers", args.workers, "--lprof", str(lprof),
          "--output-dir", str(out / "sweep"), "--", *mnist_args(args)], out / "sweep.log",
         ok_codes=(0, 1))  # 1: some setting failed; the table says which
    print((out / "sweep" / "sweep.txt").read_text(encoding="utf-8"))
    sweep = pd.read_csv(out / "sweep" / "sweep.csv")
    ok = sweep[sweep["status"] == "ok"].set_index("workers")
    if ok.empty:
        raise SystemExit(f"every sweep setting failed; see {out / 'sweep.log'}")
    best_w = int(ok["epoch_seconds"].idxmin())
    best = float(ok.loc[best_w, "epoch_seconds"])
    advised_w = advice.num_workers if advice.num_workers is not None else args.profile_workers
    advised_cpus = advice.cpus_per_task or advised_w + 1
    if advised_cpus == advised_w + 1 and advised_w in ok.index:
        advised = float(ok.loc[advised_w, "epoch_seconds"])   # the sweep ran exactly this setting
    else:  # the sweep gives W + 1 CPUs; the advice may ask for more, so run the advised pair itself
        advised = pinned_epoch(args, advised_w, advised_cpus, out / "advised",
                               f"3. the advised setting: --num-workers {advised_w} on {advised_cpus} CPUs")
    ratio = advised / best
    knee = json.loads((out / "sweep" / "sweep.json").read_text())["knee"]

    # 4. overhead: pairs run alike (all CPUs visible; the sweep pins W + 1 CPUs, so it is not reused).
    overhead = [("profiled setting", args.profile_workers, prof_epoch,
                 plain_epoch(args, args.profile_workers, out / "plain",
                             f"4a. the same epoch unprofiled (--num-workers {args.profile_workers})"))]
    if advised_w != args.profile_workers:
        _, adv_prof = profiled_epoch(args, advised_w, out / "profile_advised",
                                     f"4b. profiled epoch at the advised --num-workers {advised_w}")
        adv_plain = plain_epoch(args, advised_w, out / "plain_advised",
                                f"4c. the same epoch unprofiled (--num-workers {advised_w})")
        overhead.append(("advised setting", advised_w, adv_prof, adv_plain))
    total = time.monotonic() - t0

    lines = ["# Profiler advice vs sweep", "",
             f"advice (from a profile at num_workers={args.profile_workers}): num_workers={advice.num_workers}, "
             f"--cpus-per-task={advice.cpus_per_task}",
             f"advised setting measured: num_workers={advised_w} on {advised_cpus} CPUs: {advised:.2f} s", "",
             "| num_workers | cpus | images/s | epoch s | vs best |", "|---:|---:|---:|---:|---:|"]
    for w, row in ok.iterrows():
        mark = " (advised)" if w == advised_w else ""
        lines.append(f"| {w}{mark} | {row['cpus']} | {row['images_per_sec']:.0f} | {row['epoch_seconds']:.2f} | "
                     f"{row['epoch_seconds'] / best:.3f}x |")
    failed = sweep[sweep["status"] != "ok"]
    lines += [f"| {r.workers} | failed: {r.detail} | | | |" for r in failed.itertuples()]
    verdict = "MET" if ratio <= GOAL_RATIO else "NOT MET"
    lines += ["", f"best epoch: num_workers={best_w} at {best:.2f} s; knee (5 % throughput rule): {knee}",
              f"advised num_workers={advised_w} on {advised_cpus} CPUs: {advised:.2f} s = {ratio:.3f}x the best "
              f"-> goal (<= {GOAL_RATIO:.2f}x) {verdict}", "", "## Profiling overhead (one epoch, same setting)", "",
              "| setting | num_workers | unprofiled s | profiled s | ratio |", "|---|---:|---:|---:|---:|"]
    for name, w, prof, plain in overhead:
        lines.append(f"| {name} | {w} | {plain:.2f} | {prof:.2f} | {prof / plain:.3f}x |")
    lines += ["", f"overhead goal: <= {OVERHEAD_GOAL:.2f}x. Whole benchmark: {total:.0f} s. "
              f"Python {sys.version.split()[0]}; outputs in {out}"]
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text, encoding="utf-8")
    (out / "summary.json").write_text(json.dumps({
        "advice": {"num_workers": advice.num_workers, "cpus_per_task": advice.cpus_per_task,
                   "reasons": advice.reasons},
        "best_workers": best_w, "best_epoch_s": best, "advised_epoch_s": advised, "ratio": ratio,
        "goal_met": ratio <= GOAL_RATIO, "knee": knee, "total_s": total,
        "overhead": [{"setting": n, "workers": w, "profiled_s": p, "unprofiled_s": u, "ratio": p / u}
                     for n, w, p, u in overhead]}, indent=2) + "\n", encoding="utf-8")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
