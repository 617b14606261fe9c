"""Backs docs/results.md, "Lesson 10: GPU sharing measured".
Lesson 10: is one GPU worth sharing? Packing small jobs, and a big job with a small one beside it.

``pack``: N copies of a small job at once on one GPU (lesson 1's tuned MNIST run, and a ResNet-18 at
a small batch), N = 1, 2, 4, 8, as plain processes (the GPU time-slices between them) and under
CUDA MPS (their kernels run at once). Reports the aggregate images/s against one job alone, each
job's slowdown, and the GPU utilisation sampled through NVML.

``fgbg``: DeepPool's measurement. A large foreground job (ResNet-50, bf16, one GPU) shares its GPU
with a small background job (ResNet-18, small batch): alone, side by side, under MPS, and under MPS
with the background capped by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. Reports the foreground's loss and
the background's throughput while the foreground ran. Goal: background >= 30 % of its solo speed
while the foreground loses <= 10 %.

Each job is its own process on its own slice of the CPUs. Raw results (one JSON and one log per
job, results.json) and summary.md go to --out (default: $OUT, else runs/gpu_sharing/<time>).

    PYTHONPATH=$PWD python benchmarks/gpu_sharing.py pack     # one GPU
    PYTHONPATH=$PWD python benchmarks/gpu_sharing.py fgbg --caps 50 25 10
    PYTHONPATH=$PWD python benchmarks/gpu_sharing.py pack --quick   # CPU smoke test: tiny sizes, no MPS
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

from multi_gpu.sharing import GpuSampler, MpsDaemon, cpu_shares, mps_problem, overlap, run_together, window_rate
from profiling.cpu_rule import workers_for_cpus

ROOT = Path(__file__).resolve().parents[1]

GOAL_BG_PCT, GOAL_FG_LOSS_PCT = 30.0, 10.0


def _cap(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not a percentage from 1 to 100")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive job count")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("what", choices=("pack", "fgbg"), help="packing N small jobs, or foreground/background")
    p.add_argument("--quick", action="store_true", help="CPU smoke test at tiny sizes (MPS skipped)")
    p.add_argument("--out", type=Path, default=None, help="results folder (default $OUT, else runs/gpu_sharing/TIME)")
    p.add_argument("--counts", type=_count, nargs="+", default=None,
                   help="pack: jobs at once (default 1 2 4 8; quick 1 2)")
    p.add_argument("--jobs", nargs="+", choices=("mnist", "resnet18"), default=["mnist", "resnet18"],
                   help="pack: which small jobs")
    p.add_argument("--no-mps", action="store_true", help="plain processes only")
    p.add_argument("--caps", type=_cap, nargs="+", default=[50, 25, 10],
                   help="fgbg: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE values for the background")
    p.add_argument("--seconds", type=float, default=None,
                   help="timed seconds of each ResNet job (default 10, the foreground 20; quick 2)")
    p.add_argument("--small-batch", type=_count, default=None, help="the ResNet-18 job's batch (default 32; quick 4)")
    p.add_argument("--mnist-epochs", type=_count, default=3, help="pack: epochs of each MNIST job")
    p.add_argument("--mnist-args", default="", metavar="FLAGS",
                   help="pack: more mnist_classify.py flags for every MNIST job, as one string "
                        "(e.g. '--gpu-resident --batch-size 256 --amp', lesson 04's fast path)")
    return p


class Bench:
    """Where results go, what device and sizes are used, and the GPU sampler."""

    def __init__(self, args: argparse.Namespace, sampler: GpuSampler) -> None:
        self.args, self.sampler, self.quick = args, sampler, args.quick
        self.device = "cpu" if args.quick else "cuda"
        self.out = args.out
        self.rows: list[dict] = []
        self.seconds = args.seconds or (2.0 if args.quick else 10.0)
        args.small_batch = args.small_batch or (4 if args.quick else 32)

    def mnist(self, path: Path, cpus: list[int]) -> list[str]:
        workers = workers_for_cpus(len(cpus), 0 if self.quick else 1)
        size = ["--train-samples", "512", "--test-samples", "128", "--epochs", "1"] if self.quick else \
            ["--test-samples", "1000", "--epochs", str(self.args.mnist_epochs)]
        return [sys.executable, str(ROOT / "mnist_classify.py"), "--synthetic", "--data-dir", str(self.out / "data"),
                *size, "--num-workers", str(workers), *(["--persistent-workers"] if workers else []),
                "--log-interval", "1000000", "--device", self.device, "--metrics-json", str(path),
                *shlex.split(self.args.mnist_args)]

    def resnet(self, path: Path, model: str, batch: int, seconds: float) -> list[str]:
        image, warmup = ("32", "2") if self.quick else ("224", "10")
        return [sys.executable, str(ROOT / "benchmarks" / "resnet_bench.py"), "--model", model,
                "--per-gpu-batch", str(batch), "--image-size", image, "--warmup-steps", warmup,
                "--duration", str(seconds), "--step-times", "--channels-last", "--device", self.device,
                *([] if self.quick else ["--amp"]), "--results-json", str(path)]

    def run(self, name: str, commands: list[list[str]], paths: list[Path], env: dict[str, str],
            job_env: list[dict[str, str]] | None = None) -> list[dict]:
        """Run the jobs together; their result JSONs, or exit 1 naming the log of a failed one."""
        logs = [p.with_suffix(".log") for p in paths]
        print(f"-- {name}: {len(commands)} job(s)", flush=True)
        env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        codes = run_together(commands, logs, cpu_shares(len(commands)), env, job_env)
        for code, log in zip(codes, logs):
            if code != 0:
                tail = log.read_text(errors="replace").splitlines()[-15:]
                raise SystemExit(f"gpu_sharing: {name}: a job failed (exit {code}); see {log}\n" + "\n".join(tail))
        return [json.loads(p.read_text()) for p in paths]


def span_rate(kind: str, results: list[dict]) -> float:
    """All images trained / from the first job's start to the last one's end: a lower bound on the
    aggregate, which does not assume the jobs overlapped."""
    if kind == "mnist":
        images, start, end = (sum(r["train_images"] for r in results), min(r["train_started_at"] for r in results),
                              max(r["train_ended_at"] for r in results))
    else:
        images, start, end = (sum(r["steps"] * r["per_gpu_batch"] for r in results),
                              min(r["timed_start"] for r in results), max(r["timed_end"] for r in results))
    return images / (end - start)


def job_rates(kind: str, results: list[dict], batch: int) -> tuple[list[float], float, tuple[float, float]]:
    """Each job's images/s while all ran (ResNet: cut to the common window), the overlap, the window."""
    if kind == "mnist":
        windows = [(r["train_started_at"], r["train_ended_at"]) for r in results]
        return [r["images_per_sec"] for r in results], overlap(windows), \
            (min(s for s, _ in windows), max(e for _, e in windows))
    windows = [(r["timed_start"], r["timed_end"]) for r in results]
    start, end = max(s for s, _ in windows), min(e for _, e in windows)
    rates = [window_rate(r["step_ends"], batch, start, end) if end > start else None for r in results]
    own = [r["images_per_sec_total"] for r in results]
    return [o if w is None else w for w, o in zip(rates, own)], overlap(windows), (start, end)


def pack(bench: Bench, modes: list[str]) -> None:
    counts = bench.args.counts or ([1, 2] if bench.quick else [1, 2, 4, 8])
    for kind in bench.args.jobs:
        solo = None
        for mode in modes:
            with MpsDaemon() if mode == "mps" else contextlib.nullcontext() as mps:
                env = mps.env if mps else {}
                for n in sorted(set([1, *counts])):
                    paths = [bench.out / f"pack-{kind}-{mode}-n{n}-job{i}.json" for i in range(n)]
                    cpus = cpu_shares(n)
                    commands = [bench.mnist(p, c) if kind == "mnist" else
                                bench.resnet(p, "resnet18", bench.args.small_batch, bench.seconds)
                                for p, c in zip(paths, cpus)]
                    results = bench.run(f"pack {kind} {mode} N={n}", commands, paths, env)
                    rates, shared, (start, end) = job_rates(kind, results, bench.args.small_batch)
                    if mode == "plain" and n == 1:
                        solo = rates[0]
                    total = sum(rates)
                    slow = [solo / r if r else float("inf") for r in rates]
                    bench.rows.append({
                        "table": "pack", "job": kind, "mode": mode, "jobs": n, "aggregate_images_per_sec": total,
                        "vs_one_alone": total / solo, "per_job_images_per_sec": rates,
                        "span_images_per_sec": span_rate(kind, results),
                        "slowdown_mean": sum(slow) / n, "slowdown_worst": max(slow),
                        "overlap": shared, "gpu_util_pct": bench.sampler.mean_utilisation(start, end),
                        "files": [p.name for p in paths]})


def fgbg(bench: Bench, use_mps: bool) -> None:
    fg_model, fg_batch = ("resnet18", 8) if bench.quick else ("resnet50", 256)
    fg_seconds = bench.args.seconds or (3.0 if bench.quick else 20.0)
    bg_seconds = fg_seconds + (10.0 if bench.quick else 20.0)  # outlasts the foreground's start-up
    batch = bench.args.small_batch

    def one(name: str, env: dict[str, str], bg_env: dict[str, str] | None, with_fg: bool = True,
            with_bg: bool = True) -> dict:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")  # "MPS, background cap 25 %": mps-background-cap-25
        paths = [bench.out / f"fgbg-{slug}-{who}.json" for who, on in (("fg", with_fg), ("bg", with_bg)) if on]
        commands, job_env = [], []
        if with_fg:
            commands.append(bench.resnet(paths[0], fg_model, fg_batch, fg_seconds))
            job_env.append({})
        if with_bg:
            commands.append(bench.resnet(paths[-1], "resnet18", batch, bg_seconds if with_fg else fg_seconds))
            job_env.append(bg_env or {})
        results = bench.run(f"fgbg {name}", commands, paths, env, job_env)
        fg = results[0] if with_fg else None
        bg = results[-1] if with_bg else None
        row = {"table": "fgbg", "setting": name, "files": [p.name for p in paths]}
        if fg is not None:
            row["fg_images_per_sec"] = fg["images_per_sec_total"]
            start, end = fg["timed_start"], fg["timed_end"]
            row["gpu_util_pct"] = bench.sampler.mean_utilisation(start, end)
        if bg is not None:  # the background's speed while the foreground was timed (or alone)
            start, end = (fg["timed_start"], fg["timed_end"]) if fg else (bg["timed_start"], bg["timed_end"])
            row["bg_images_per_sec"] = window_rate(bg["step_ends"], batch, start, end)
            row["bg_covers_fg"] = fg is None or (bg["timed_start"] <= start and bg["timed_end"] >= end)
        return row

    fg_solo = one("foreground alone", {}, None, with_bg=False)
    bg_solo = one("background alone", {}, None, with_fg=False)
    rows = [one("side by side", {}, None)]
    if use_mps:
        with MpsDaemon() as mps:
            rows.append(one("MPS", mps.env, None))
            for cap in bench.args.caps:
                rows.append(one(f"MPS, background cap {cap} %", mps.env,
                                {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(cap)}))
    for row in rows:
        row["fg_loss_pct"] = 100 * (1 - row["fg_images_per_sec"] / fg_solo["fg_images_per_sec"])
        row["bg_pct_of_solo"] = 100 * (row["bg_images_per_sec"] or 0.0) / bg_solo["bg_images_per_sec"]
        row["goal_met"] = row["bg_pct_of_solo"] >= GOAL_BG_PCT and row["fg_loss_pct"] <= GOAL_FG_LOSS_PCT
    bench.rows += [fg_solo, bg_solo, *rows]


def _num(value: float | None, fmt: str = ",.0f", unit: str = "") -> str:
    return "n/a" if value is None else format(value, fmt) + unit


def summary(bench: Bench, header: list[str]) -> str:
    lines = [*header, ""]
    pack_rows = [r for r in bench.rows if r["table"] == "pack"]
    if pack_rows:
        lines += ["| job | mode | jobs | aggregate images/s | vs one alone | per job images/s (min-max) "
                  "| slowdown mean / worst | jobs overlapped | over the whole span | GPU util |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in pack_rows:
            per = r["per_job_images_per_sec"]
            lines.append(f"| {r['job']} | {r['mode']} | {r['jobs']} | {_num(r['aggregate_images_per_sec'])} "
                         f"| {r['vs_one_alone']:.2f}x | {_num(min(per))}-{_num(max(per))} "
                         f"| {r['slowdown_mean']:.2f}x / {r['slowdown_worst']:.2f}x | {100 * r['overlap']:.0f} % "
                         f"| {_num(r['span_images_per_sec'])} "
                         f"| {_num(r['gpu_util_pct'], '.0f', ' %')} |")
        lines.append("\nAggregate: the sum of the jobs' own rates (ResNet: counted while all ran); 'over the whole "
                     "span': all images / first start to last end, a lower bound when the jobs overlapped little.")
        for r in pack_rows:
            if r["job"] == "mnist" and r["jobs"] == 4:
                lines.append(f"\nGoal (MNIST, 4 jobs >= 2.5x one alone), {r['mode']}: "
                             f"{r['vs_one_alone']:.2f}x, {'met' if r['vs_one_alone'] >= 2.5 else 'NOT met'}")
    fg_rows = [r for r in bench.rows if r["table"] == "fgbg"]
    if fg_rows:
        lines += ["| setting | foreground images/s | foreground loses | background images/s | background vs alone "
                  "| GPU util | goal |", "|---|---:|---:|---:|---:|---:|---|"]
        for r in fg_rows:
            goal = "" if "goal_met" not in r else ("met" if r["goal_met"] else "no")
            lines.append(f"| {r['setting']} | {_num(r.get('fg_images_per_sec'))} "
                         f"| {_num(r.get('fg_loss_pct'), '.1f', ' %')} "
                         f"| {_num(r.get('bg_images_per_sec'))} | {_num(r.get('bg_pct_of_solo'), '.0f', ' %')} "
                         f"| {_num(r.get('gpu_util_pct'), '.0f', ' %')} | {goal} |")
        shared = [r for r in fg_rows if "goal_met" in r]
        met = [r["setting"] for r in shared if r["goal_met"]]
        lines.append(f"\nGoal (background >= {GOAL_BG_PCT:.0f} % of alone while the foreground loses <= "
                     f"{GOAL_FG_LOSS_PCT:.0f} %): " + (f"met by {', '.join(met)}" if met else "NOT met. Frontier "
                     "(foreground loss -> background share): " + "; ".join(
                         f"{r['setting']}: {r['fg_loss_pct']:.1f} % -> {r['bg_pct_of_solo']:.0f} %"
                         for r in sorted(shared, key=lambda r: r["fg_loss_pct"]))))
        if not all(r.get("bg_covers_fg", True) for r in fg_rows):
            lines.append("Warning: in some runs the background did not cover the foreground's whole timed window.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else
                       Path("runs/gpu_sharing") / time.strftime("%Y%m%d-%H%M%S"))
    args.out = out
    import torch

    if not args.quick and not torch.cuda.is_available():
        print("gpu_sharing: error: no CUDA GPU is visible; use --quick for the CPU smoke test", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    problem = "--quick runs on the CPU" if args.quick else ("--no-mps" if args.no_mps else mps_problem())
    header = [f"# GPU sharing: {args.what}{' (quick CPU smoke test: numbers mean nothing)' if args.quick else ''}", "",
              f"device: {'cpu' if args.quick else torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"{len(os.sched_getaffinity(0))} CPUs; command: {' '.join(sys.argv)}"]
    if problem:
        header.append(f"MPS: skipped ({problem})")
    with GpuSampler() as sampler:
        if sampler.problem:
            header.append(sampler.problem)
        print("\n".join(header[2:]), flush=True)
        bench = Bench(args, sampler)
        if args.what == "pack":
            pack(bench, ["plain"] + ([] if problem else ["mps"]))
        else:
            fgbg(bench, problem is None)
    (out / "results.json").write_text(json.dumps(bench.rows, indent=1) + "\n")
    text = summary(bench, header)
    (out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
