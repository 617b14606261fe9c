"""Advice v2 on a GPU node: profile at num_workers=1, take the (measured) advice, sweep, compare.

For each workload (MNIST as shipped; MNIST with `--augment heavy`; lesson 9's folder of small JPEGs,
read by image_classify.py):
  1. `python -m profiling run` one epoch at --num-workers 1: the profile, and the loader curve timed
     at exit; the advice is read from the report (measured), and from the bare profile (the estimate);
     then `profiling run --paced` profiles it again, and its curve at exit holds each batch for the
     loop's own compute, as timed in that run (the hand-over measured, where the plain curve adds
     CURVE_MARGIN): the one-command paced advice a user gets;
  2. `python -m profiling sweep --workers 0,1,2,4,6,8,12,16 --gpus 1 --repeats 3` on two epochs per
     run: each setting pinned to W + the main process's CPUs (the kit's one CPU rule), timed on its
     second epoch (the first carries the run's warm-up), the median of 3 runs kept; the k that each
     rule advises (margin 2; on the paced curve the fewest fed workers, those + PACED_SLACK, and that
     capped by margin 2; the fewest fed at --hold-share of the step) is added, so none is interpolated;
  3. the goals, for each rule: the advised epoch within 5 % of the best, at most the knee + 2 workers
     (the knee: the fewest workers within 5 % of the best throughput), and the CPUs saved against the
     node's share.
Each workload's results go to OUT/<workload>/summary.{md,json} as soon as it is done, then
OUT/summary.md gathers them. From the repository root, on the H100 (16 cores):

    PYTHONUNBUFFERED=1 python3 benchmarks/advice_v2.py --out "$OUT"

Single-epoch runs of one setting differed by 20-50 % on GPU nodes, more than the 5 % goal
(docs/results.md, "Where the sweep's noise comes from"): hence the warm second epoch and the median
of 3. With both profiles, plain MNIST took over 560 s on an H100 (the sweep had 9 settings), so on
the device run one workload per call (`--workloads mnist`, then `--workloads mnist-heavy-aug`, ...)
with `--workers 2,4,6,8,16 --hold-share 0`: that leaves out the slow 0 and 1, which were never near a
knee, 12, and the curve paced at a share of the step. Each workload's summary is written as soon as it is
done. Each summary also shows what other margins and fed shares would have advised.
`--quick` is a CPU smoke test (tiny data, workers 0,1).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mnist_classify import positive_int
from profile_advice import known_workloads, step  # one command, its log, its time (benchmarks/ is on sys.path)
from profiling.cpu_rule import cpus_for_workers, first_cpus
from profiling.curve import FED_SHARE, PACED_SLACK, choose_workers, read_curve
from profiling.report import build_report

REPO = Path(__file__).resolve().parents[1]

WITHIN = 1.05        # advised epoch within 5 % of the best
KNEE_SLACK = 2       # at most the knee + 2 workers
WORKLOADS = {"mnist": [], "mnist-heavy-aug": ["--augment", "heavy"], "small-files": []}  # name -> extra flags
WHAT_IF_MARGINS = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5)  # the advice this run's curve gives at other margins
WHAT_IF_SHARES = (0.85, 0.9, FED_SHARE, 0.98)  # the same for the paced curve's fed share


def epoch_at(k: int, ok: pd.DataFrame) -> tuple[float, bool]:
    """The sweep's epoch time at k workers, and whether it was interpolated (linear between the swept
    settings around k) rather than swept."""
    swept = ok["epoch_seconds"].sort_index()
    return float(np.interp(k, swept.index.to_numpy(), swept.to_numpy())), k not in swept.index


def what_if(curve, compute_s: float, worker_cap: int, ok: pd.DataFrame, best: float) -> list[dict]:
    """For each margin (each fed share, for a paced curve): the k the curve would advise, and its epoch
    time against the best (marked interpolated when k was not swept)."""
    paced = curve.hold_ms > 0
    rows = []
    for value in WHAT_IF_SHARES if paced else WHAT_IF_MARGINS:
        choice = choose_workers(curve, compute_s, worker_cap, **{"fed_share" if paced else "margin": value})
        if choice is None:
            continue
        epoch, interpolated = epoch_at(choice.workers, ok)
        rows.append({"margin": round(value, 3), "workers": choice.workers, "ratio": round(epoch / best, 3),
                     "interpolated": interpolated})
    return rows


def rule_choices(margin_k: int | None, fed: int | None, paced_k: int | None) -> dict[str, int | None]:
    """The k each rule gives: margin 2 on the curve timed alone (`run --alone`); on the paced curve,
    the fewest workers that keep the held loop fed, and the paced rule (those + PACED_SLACK, what
    `run --paced` advises); and the paced rule capped by the plain curve's k."""
    return {"margin 2": margin_k, "paced: fewest fed": fed, f"paced: fed + {PACED_SLACK}": paced_k,
            "paced, capped by margin 2": min(margin_k, paced_k) if None not in (margin_k, paced_k) else None}


def fed_and_advised(numbers) -> tuple[int | None, int | None]:
    """From a paced report's numbers: the fewest workers that kept the held loop fed (the advice itself
    when no slack was added: fed with none, or never fed) and the advice."""
    fed = numbers.curve_fed_workers if numbers.curve_fed_workers is not None else numbers.num_workers
    return fed, numbers.num_workers


def judge(k: int | None, ok: pd.DataFrame, best: float, knee: int | None, gpus: int, node_share: int,
          wait: pd.Series) -> dict:
    """One rule's k against the sweep: its epoch against the best, the knee + 2 goal, the CPUs saved,
    and the data wait it leaves beyond the least any setting had (as a share of the best epoch)."""
    if k is None:
        return {"workers": None}
    epoch, interpolated = epoch_at(k, ok)
    extra = float(np.interp(k, wait.index.to_numpy(), wait.to_numpy()) - wait.min()) / best if len(wait) else None
    return {"workers": k, "cpus": cpus_for_workers(k, gpus), "ratio": round(epoch / best, 3),
            "epoch_s": epoch, "interpolated": interpolated, "within_5pct": epoch / best <= WITHIN,
            "at_most_knee_plus_2": knee is not None and k <= knee + KNEE_SLACK,
            "cpus_saved": node_share - cpus_for_workers(k, gpus),
            "extra_wait": None if extra is None else round(extra, 3)}


def steady_waits(sweep_dir: Path) -> pd.Series:
    """Per setting, the median over its runs of the data wait per warm epoch (the epochs after the
    first). The wait is the part of an epoch the workers control; the rest, the main process's own
    compute, moved by up to 40 % between runs on one H100 and hides a 5 % difference in epoch time."""
    runs = pd.read_csv(sweep_dir / "runs.csv") if (sweep_dir / "runs.csv").is_file() else \
        pd.read_csv(sweep_dir / "sweep.csv")
    waits: dict[int, list[float]] = {}
    for row in runs[runs["status"] == "ok"].itertuples():
        folder = Path(str(row.detail)).parent  # the run's log, beside its metrics.json
        try:
            per_epoch = json.loads((folder / "metrics.json").read_text())["epoch_data_wait_seconds"]
        except (OSError, KeyError, ValueError):
            continue
        warm = per_epoch[1:] or per_epoch
        waits.setdefault(int(row.workers), []).append(sum(warm) / len(warm))
    return pd.Series({w: float(np.median(v)) for w, v in sorted(waits.items())}, dtype=float)


def wait_knee(wait: pd.Series, best: float) -> int | None:
    """The fewest workers whose wait is within 5 % of the best epoch of the least wait any setting had."""
    if wait.empty:
        return None
    return int(wait[wait - wait.min() <= (WITHIN - 1) * best].index.min())


def paced_report(args: argparse.Namespace, name: str, out: Path):
    """`profiling run --paced` at num_workers=1 for --paced-epochs: a second profile, whose curve at exit
    holds each batch for the loop's own compute per batch as timed in that run (from the epochs after
    the first, when there are more); its report is the paced advice."""
    command = script_args(args, name, args.paced_epochs)
    step(f"{out.name}: 1b. profile again with `run --paced` (the curve held for the loop's own step)",
         [sys.executable, "-m", "profiling", "run", "--paced", "--trace-batches", "0",
          "--output-dir", str(out / "paced"), "--curve-seconds",
          str(args.curve_seconds), "--formats", "text,json", "--", *command, "--num-workers", "1"],
         out / "paced.log")
    return build_report(out / "paced" / f"{Path(command[0]).stem}.lprof")


def paced_curve(args: argparse.Namespace, command: list[str], out: Path, compute_ms: float, name: str):
    """The loader timed with each batch held `compute_ms` (`profiling loader --hold-ms`): what a loop
    of that step gets beside k workers, hand-over included."""
    step(f"{out.name}: 1c. the loader curve paced by a held loop ({compute_ms:.2f} ms per batch)",
         [sys.executable, "-m", "profiling", "loader", "--output-dir", str(out / name), "--seconds",
          str(args.curve_seconds), "--hold-ms", f"{compute_ms:.3f}", "--", *command, "--num-workers", "1"],
         out / f"{name}.log")
    return read_curve(out / name / f"{Path(command[0]).stem}.curve.json")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/advice_v2"))
    p.add_argument("--workers", default="0,1,2,4,6,8,12,16")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--train-samples", type=int, default=60_000, help="plain MNIST: the whole set, as shipped")
    p.add_argument("--heavy-train-samples", type=int, default=30_000,
                   help="MNIST with --augment heavy (half the set: a 60k epoch at 0-1 workers runs ~50 s)")
    p.add_argument("--small-files", type=int, default=20_000,
                   help="JPEGs in the small-files folder (lesson 9's `python -m small_files generate`), "
                        "read by image_classify.py (ResNet-18)")
    p.add_argument("--repeats", type=int, default=None, help="runs per sweep setting; the median is kept "
                   "(default 3, or 1 with --quick)")
    p.add_argument("--hold-share", type=float, default=0.8,
                   help="also pace a curve at this share of the profiled compute (0: not): on an H100 the fed "
                        "loop's step was 0.74-0.86 of what the profile at num_workers=1 said")
    p.add_argument("--sweep-epochs", type=int, default=2,
                   help="epochs per sweep run; with 2 or more each run is timed after its first")
    p.add_argument("--paced-epochs", type=positive_int, default=2, metavar="N",
                   help="epochs of the `run --paced` profile; with 2 or more the hold is the warm epochs' step")
    p.add_argument("--test-samples", type=int, default=1_000)
    p.add_argument("--curve-seconds", type=float, default=3.0)
    p.add_argument("--data-dir", type=Path, default=Path("data"))
    p.add_argument("--quick", action="store_true", help="CPU smoke test: tiny data, workers 0,1")
    args = p.parse_args(argv)
    known_workloads(p, args.workloads, WORKLOADS)
    if args.quick:
        args.workers, args.train_samples, args.heavy_train_samples, args.test_samples = "0,1", 640, 320, 128
        args.small_files = 128
        args.curve_seconds = 0.3
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    return args


def small_files_root(args: argparse.Namespace) -> Path:
    return (args.data_dir / f"small-files-{args.small_files}").resolve()


def script_args(args: argparse.Namespace, name: str, epochs: int = 1) -> list[str]:
    if name == "small-files":  # lesson 9's folder of small JPEGs: each decoded and augmented in the workers
        size = ["--image-size", "32", "--batch-size", "16"] if args.quick else []  # 8 batches: 7 steps to pace by
        return [str(REPO / "image_classify.py"), "--data", str(small_files_root(args) / "train"), "--no-test",
                "--epochs", str(epochs), *size]
    samples = args.heavy_train_samples if WORKLOADS[name] else args.train_samples
    return [str(REPO / "mnist_classify.py"), "--synthetic", "--epochs", str(epochs),
            "--data-dir", str(args.data_dir.resolve()), "--train-samples", str(samples),
            "--test-samples", str(args.test_samples), *WORKLOADS[name]]


def workload(args: argparse.Namespace, name: str, out: Path, gpus: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    command = script_args(args, name)
    step(f"{name}: 1. profile at --num-workers 1 (and time the loader alone at exit)",
         [sys.executable, "-m", "profiling", "run", "--alone", "--trace-batches", "0",
         "--output-dir", str(out / "profile"),
          "--curve-seconds", str(args.curve_seconds), "--", *command, "--num-workers", "1"], out / "profile.log")
    stem = Path(command[0]).stem
    lprof = out / "profile" / f"{stem}.lprof"
    report = build_report(lprof)
    advice, numbers = report.advice, report.advice.numbers
    bare = report
    if report.curve is not None:  # the same profile read without its curve: what a bare .lprof gets
        curve = out / "profile" / f"{stem}.curve.json"
        curve.rename(out / "profile" / "curve.json")
        bare = build_report(lprof)
        (out / "profile" / "curve.json").rename(curve)
    estimate = {"num_workers": bare.advice.num_workers, "cpus_per_task": bare.advice.cpus_per_task}
    print(f"   advice ({numbers.basis}): num_workers={advice.num_workers}, --cpus-per-task={advice.cpus_per_task}; "
          f"bare-profile estimate: {estimate}")
    paced_run = paced_report(args, name, out)
    paced = paced_run.curve if paced_run.curve is not None and paced_run.curve.hold_ms > 0 \
        and paced_run.advice.numbers.basis == "measured" else None  # a curve that stopped short advises nothing
    rules = rule_choices(advice.num_workers, *(fed_and_advised(paced_run.advice.numbers) if paced else (None, None)))
    short = None  # the H100's hypothesis: held for the fed step (a share of the profiled), it finds the knee
    if paced is not None and args.hold_share > 0:
        short_ms = paced.hold_ms * args.hold_share
        short = paced_curve(args, command, out, short_ms, "paced-share")
        short_choice = choose_workers(short, short_ms / 1e3, numbers.worker_cap)
        rules[f"paced at {args.hold_share:g} x the step: fewest fed"] = None if short_choice is None else (
            short_choice.workers if short_choice.fed_workers is None else short_choice.fed_workers)
    workers = ",".join(str(w) for w in sorted({int(w) for w in args.workers.split(",")}
                                              | {k for k in rules.values() if k is not None}))
    sweep_cmd = [sys.executable, "-m", "profiling", "sweep", "--workers", workers, "--lprof", str(lprof),
                 "--output-dir", str(out / "sweep"), "--gpus", str(gpus), "--repeats", str(args.repeats),
                 "--", *script_args(args, name, args.sweep_epochs)]
    step(f"{name}: 2. sweep num_workers over {workers}", sweep_cmd, out / "sweep.log", ok_codes=(0, 1))
    sweep = pd.read_csv(out / "sweep" / "sweep.csv")
    ok = sweep[sweep["status"] == "ok"].set_index("workers")
    knee = json.loads((out / "sweep" / "sweep.json").read_text())["knee"]
    wait = steady_waits(out / "sweep")
    best_w = int(ok["epoch_seconds"].idxmin())
    best = float(ok.loc[best_w, "epoch_seconds"])
    k = advice.num_workers
    batch = (report.curve.batch_size if report.curve is not None else None) or 64
    node_share = len(first_cpus(10_000))  # the node's cores for this one GPU: what "ask for everything" gets
    judged = {rule: judge(w, ok, best, knee, gpus, node_share, wait) for rule, w in rules.items()}
    default = judged["margin 2"]  # the default rule's verdict, also given at the top level
    asked = default.get("cpus")
    result = {
        "workload": name, "command": " ".join(command), "basis": numbers.basis, "advised_workers": k,
        "cpus_asked": asked, "estimate_without_curve": estimate, "knee": knee, "best_workers": best_w,
        "best_epoch_s": best, "advised_epoch_s": default.get("epoch_s"), "ratio": default.get("ratio", float("nan")),
        "within_5pct": default.get("within_5pct", False),
        "at_most_knee_plus_2": default.get("at_most_knee_plus_2", False),
        "node_share_cpus": node_share, "cpu_hours_saved_per_gpu_hour": default.get("cpus_saved"),
        "curve": {p.workers: round(p.batches_per_s, 1) for p in report.curve.points} if report.curve else None,
        "compute_ms_per_batch": numbers.compute_ms, "reasons": advice.reasons,
        # the loop's fastest step in the sweep (images/s over the batch size): what the profiled
        # compute per batch (at num_workers=1, GPU mostly idle) is meant to predict
        "fed_ms_per_batch": 1e3 * batch / float(ok["images_per_sec"].max()),
        # ... and the loop's compute per batch at each setting, timed in the sweep's own runs (no profiler)
        "sweep_compute_ms": {int(w): round(float(v), 3) for w, v in ok["compute_ms"].dropna().items()},
        "what_if_margins": what_if(report.curve, numbers.compute_ms / 1e3, numbers.worker_cap, ok, best)
        if report.curve is not None and numbers.compute_ms else [],
        "paced_curve": {p.workers: round(p.batches_per_s, 1) for p in paced.points} if paced else None,
        "paced_hold_ms": paced.hold_ms if paced else None,  # the loop's own step, timed in the `run --paced` run
        "paced_compute_ms_per_batch": round(paced_run.advice.numbers.compute_ms or 0.0, 3),  # ... as its profile says
        "paced_reasons": paced_run.advice.reasons,
        "paced_share_curve": {p.workers: round(p.batches_per_s, 1) for p in short.points} if short else None,
        "paced_share_hold_ms": short.hold_ms if short else None,
        "what_if_paced": what_if(paced, numbers.compute_ms / 1e3, numbers.worker_cap, ok, best) if paced else [],
        "wait_per_epoch_s": {int(w): round(v, 3) for w, v in wait.items()}, "wait_knee": wait_knee(wait, best),
        "rules": judged,
        "sweep_command": " ".join(sweep_cmd), "sweep": json.loads(ok.reset_index().to_json(orient="records"))}
    lines = [f"## {name}", "", f"`{result['command']}`", "",
             f"advice ({numbers.basis}, from a profile at num_workers=1): num_workers={k}, --cpus-per-task={asked}; "
             f"the bare profile's estimate: {estimate}",
             f"loader curve (k: batches/s): {result['curve']}; compute {numbers.compute_ms:.2f} ms/batch profiled, "
             f"{result['fed_ms_per_batch']:.2f} ms/batch at the sweep's best",
             "what other margins would advise (k, vs best): " + ", ".join(
                 f"{w['margin']:g}: {w['workers']} ({w['ratio']:.3f}x{'~' if w['interpolated'] else ''})"
                 for w in result["what_if_margins"]),
             f"`run --paced` curve (each batch held {result['paced_hold_ms']} ms, the loop's own step; its profile "
             f"said {result['paced_compute_ms_per_batch']} ms; k: batches/s): {result['paced_curve']}",
             "what the paced curve would advise (fed share: k, vs best): " + ", ".join(
                 f"{w['margin']:g}: {w['workers']} ({w['ratio']:.3f}x{'~' if w['interpolated'] else ''})"
                 for w in result["what_if_paced"]),
             f"paced at a share of the compute (each batch held {result['paced_share_hold_ms']} ms; k: batches/s): "
             f"{result['paced_share_curve']}", "",
             f"loop compute per batch in the sweep (k: ms, median of the runs): {result['sweep_compute_ms']}",
             f"data wait per warm epoch (k: s, median of the runs): {result['wait_per_epoch_s']}; "
             f"knee by the wait: {result['wait_knee']}", "",
             "| rule | k | CPUs | vs best | within 5 % | <= knee + 2 | CPUs saved | extra wait / best epoch |",
             "|---|---:|---:|---:|---|---|---:|---:|",
             *[f"| {rule} | {j['workers']} | {j['cpus']} | {j['ratio']:.3f}x{'~' if j['interpolated'] else ''} | "
               f"{'MET' if j['within_5pct'] else 'NOT MET'} | {'MET' if j['at_most_knee_plus_2'] else 'NOT MET'} | "
               f"{j['cpus_saved']} | {j['extra_wait']} |"
               for rule, j in result["rules"].items() if j["workers"] is not None], "",
             f"sweep: `{result['sweep_command']}` (median of {args.repeats} runs, each timed after its first epoch "
             f"of {args.sweep_epochs})", "",
             "| num_workers | cpus | images/s | epoch s | vs best |", "|---:|---:|---:|---:|---:|"]
    for w, row in ok.iterrows():
        lines.append(f"| {w}{' (advised)' if w == k else ''} | {row['cpus']} | {row['images_per_sec']:.0f} | "
                     f"{row['epoch_seconds']:.2f} | {row['epoch_seconds'] / best:.3f}x |")
    lines += ["", f"best: {best_w} workers ({best:.2f} s); knee: {knee}; advised {k} = {result['ratio']:.3f}x the best "
              f"-> within 5 %: {'MET' if result['within_5pct'] else 'NOT MET'}; <= knee + 2: "
              f"{'MET' if result['at_most_knee_plus_2'] else 'NOT MET'}; CPUs asked {asked} of the node's {node_share} "
              f"per GPU: {result['cpu_hours_saved_per_gpu_hour']} CPU-hours saved per GPU-hour", ""]
    (out / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    import torch

    gpus = 1 if torch.cuda.is_available() else 0
    t0 = time.monotonic()
    step("0. generate the data set once", [sys.executable, *script_args(args, "mnist"), "--num-workers", "0",
                                          "--max-steps", "1"], out / "warmup.log")
    if "small-files" in args.workloads.split(",") and not (small_files_root(args) / "train").is_dir():
        step("0. write the small-files folder once", [sys.executable, "-m", "small_files", "generate",
             str(small_files_root(args)), "--train", str(args.small_files), "--val", "64"], out / "small_files.log")
    results = [workload(args, name, out / name, gpus) for name in args.workloads.split(",")]
    gpu = torch.cuda.get_device_name(0) if gpus else "no GPU"
    head = [f"# Advice v2: measured advice vs sweep ({gpu}, {len(first_cpus(10_000))} CPUs, "
            f"{time.monotonic() - t0:.0f} s)", ""]
    text = "\n".join(head + [(out / r["workload"] / "summary.md").read_text() for r in results])
    (out / "summary.md").write_text(text, encoding="utf-8")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
