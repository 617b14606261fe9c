"""Backs docs/results.md, "Lesson 1 → 4: from the baseline to the tuned path".
Epoch time, images/s and accuracy of lesson 1 under each data path and speed setting.

Each setting runs `mnist_classify.py` in its own process (so no setting inherits another's
warm caches, workers or compiled graphs) on the generated 60k/10k digit set, reads the run's
--metrics-json, and the results land in one table: printed, and written as CSV and Markdown.

Epoch 1 includes one-off costs (cuDNN autotuning, worker start-up, torch.compile), so runs do
two epochs by default and the table shows both; "warm" columns use the last epoch.

On the GPU machine (offline; needs only torch, torchvision, pandas and line_profiler):
    python benchmarks/mnist_epoch.py --out-dir results/mnist-h100
A quick check on a CPU-only machine:
    python benchmarks/mnist_epoch.py --device cpu --train-samples 640 --test-samples 500 \
        --workers 0,1 --resident-batches 128 --no-compile --epochs 1
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from digits import synthetic

REPO = Path(__file__).resolve().parents[1]

SCRIPT = REPO / "mnist_classify.py"


def settings_to_run(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(label, extra flags) per run: the loader sweep, then the GPU-resident ladder."""
    runs = [(f"loader, {w} workers, batch 64", ["--num-workers", str(w)]) for w in args.workers]
    runs.append(("resident, batch 64", ["--gpu-resident"]))
    for batch in args.resident_batches:
        runs.append((f"resident, batch {batch}, amp", ["--gpu-resident", "--batch-size", str(batch), "--amp"]))
    if args.compile:
        batch = str(args.resident_batches[-1])
        runs.append((f"resident, batch {batch}, amp, compile",
                     ["--gpu-resident", "--batch-size", batch, "--amp", "--compile"]))
    return runs


def run_one(args: argparse.Namespace, label: str, flags: list[str], metrics: Path, timeout: float,
            data_flags: list[str] | None = None) -> dict:
    """One training process; returns a table row (an 'error' column says what went wrong).

    data_flags replace the generated set (--synthetic and its sizes), e.g. to train on real digits.
    """
    if data_flags is None:
        data_flags = ["--synthetic", "--data-dir", str(args.data_dir), "--train-samples", str(args.train_samples),
                      "--test-samples", str(args.test_samples)]
    cmd = [sys.executable, str(SCRIPT), *data_flags,
           "--epochs", str(args.epochs), "--device", args.device, "--log-interval", "100000",
           "--metrics-json", str(metrics), *flags]
    row: dict = {"setting": label, "flags": " ".join(flags)}
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "error": f"timed out after {timeout:.0f} s"}
    row["process_s"] = round(time.perf_counter() - started, 2)
    if proc.returncode != 0 or not metrics.exists():
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {**row, "error": f"exit {proc.returncode}: {tail}"}
    m = json.loads(metrics.read_text())
    epochs = m["epoch_seconds"]
    images_per_epoch = m["train_images"] / len(epochs)
    row.update({
        "epoch1_s": round(epochs[0], 3), "warm_epoch_s": round(epochs[-1], 3),
        "warm_images_per_s": round(images_per_epoch / epochs[-1]),
        "data_wait_pct": round(100 * m["data_wait_fraction"], 1),
        "test_accuracy": round(m["test_accuracy"], 2), "steps": m["steps"],
        "amp": m["settings"]["amp"], "device": m["settings"]["device"],
        "gpu": (m["settings"]["gpus_visible"] or ["-"])[0],
        "cpus_allowed": m["settings"]["cpus_allowed"]})
    return row


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", type=Path, default=Path("runs/bench-mnist"), help="where CSV and Markdown go")
    p.add_argument("--data-dir", type=Path, default=Path(os.environ.get("MNIST_DATA", "./data")))
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto", "mps"])
    p.add_argument("--train-samples", type=int, default=60_000)
    p.add_argument("--test-samples", type=int, default=10_000)
    p.add_argument("--epochs", type=int, default=2, help="epochs per run (the last one is the warm one)")
    p.add_argument("--workers", type=_ints, default=[1, 2, 4, 8], help="comma list of --num-workers")
    p.add_argument("--resident-batches", type=_ints, default=[256, 1024], help="comma list, each with --amp")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                   help="add a resident + amp + torch.compile run at the largest batch")
    p.add_argument("--budget-s", type=float, default=360, help="skip runs that would start after this")
    p.add_argument("--run-timeout-s", type=float, default=180)
    args = p.parse_args(argv)

    began = time.perf_counter()
    raw = args.data_dir / "synthetic" / "MNIST" / "raw"
    made = synthetic.ensure(raw, args.train_samples, args.test_samples, seed=0)
    print(f"data: {raw} ({'generated' if made else 'reused'} in {time.perf_counter() - began:.1f} s)", flush=True)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, flags) in enumerate(settings_to_run(args)):
            left = args.budget_s - (time.perf_counter() - began)
            if left < 20:
                rows.append({"setting": label, "flags": " ".join(flags), "error": "skipped: time budget spent"})
                continue
            row = run_one(args, label, flags, Path(tmp) / f"run{i}.json", min(args.run_timeout_s, left))
            rows.append(row)
            print(f"  {label}: " + (row.get("error") or f"warm epoch {row['warm_epoch_s']} s, "
                  f"{row['warm_images_per_s']} img/s, accuracy {row['test_accuracy']}%"), flush=True)

    table = pd.DataFrame(rows)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out_dir / "mnist_epoch.csv", index=False)
    header = (f"# MNIST epoch benchmark\n\nhost `{platform.node()}`, python {platform.python_version()}, "
              f"{args.train_samples} train / {args.test_samples} test synthetic digits, {args.epochs} epoch(s) "
              f"per run, total {time.perf_counter() - began:.0f} s\n\n")
    (args.out_dir / "mnist_epoch.md").write_text(header + markdown(table))
    print(table.to_string(index=False))
    print(f"\nwrote {args.out_dir / 'mnist_epoch.csv'} and {args.out_dir / 'mnist_epoch.md'}")
    return 1 if "error" in table and table["error"].notna().any() else 0


def markdown(table: pd.DataFrame) -> str:
    """A GitHub table without pandas' optional tabulate dependency (GPU images may lack it)."""
    cells = table.astype(object).where(table.notna(), "")
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in cells.itertuples(index=False)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
