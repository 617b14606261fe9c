"""Backs docs/results.md, "Lesson 4 on real digits".
Which large-batch recipe keeps lesson 1's accuracy on real digits? A sweep, to choose by measurement.

Every candidate trains on the real split (first 8,000 of MNIST's t10k digits, tested on the last
2,000; see digits/real.py) for the same epochs, on the GPU-resident bf16 path, with several seeds.
Runs share one process (each calls mnist_classify.main) because only accuracy is compared here;
timings come from benchmarks/time_to_accuracy.py, which gives every run its own process.

    python benchmarks/recipe_sweep.py --out runs/sweep            # on the GPU machine
    python benchmarks/recipe_sweep.py --device cpu --train 512 --test 200 --epochs 1 --seeds 1 --quick
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

import mnist_classify  # noqa: E402
from digits import real as t10k  # noqa: E402
from benchmarks.mnist_epoch import markdown  # noqa: E402

FAST = ["--gpu-resident", "--amp"]


def candidates(quick: bool) -> list[tuple[str, list[str]]]:
    """(label, flags): the examples recipe at batch 64, then large-batch variants."""
    runs = [("examples, batch 64 (resident fp32)", ["--gpu-resident"])]
    batches = [512] if quick else [512, 1024]
    for b in batches:
        big = [*FAST, "--batch-size", str(b)]
        runs += [
            (f"adadelta step, batch {b}", big),
            (f"adadelta warmup-cosine sqrt, batch {b}",
             [*big, "--schedule", "warmup-cosine", "--lr-scaling", "sqrt"]),
            (f"adamw 1e-3 sqrt warmup-cosine, batch {b}",
             [*big, "--optimizer", "adamw", "--lr", "1e-3", "--lr-scaling", "sqrt", "--schedule", "warmup-cosine"]),
            (f"adamw 2e-3 sqrt warmup-cosine, batch {b}",
             [*big, "--optimizer", "adamw", "--lr", "2e-3", "--lr-scaling", "sqrt", "--schedule", "warmup-cosine"]),
            (f"adamw 1e-3 linear warmup-cosine, batch {b}",
             [*big, "--optimizer", "adamw", "--lr", "1e-3", "--lr-scaling", "linear", "--schedule", "warmup-cosine"]),
            (f"sgd 0.01 linear warmup-cosine, batch {b}",
             [*big, "--optimizer", "sgd", "--lr", "0.01", "--lr-scaling", "linear", "--schedule", "warmup-cosine"]),
        ]
        if quick:
            break
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/recipe-sweep"))
    p.add_argument("--device", default="cuda")
    p.add_argument("--train", type=int, default=t10k.TRAIN)
    p.add_argument("--test", type=int, default=t10k.TEST)
    p.add_argument("--epochs", type=int, default=14)
    p.add_argument("--seeds", default="1,2,3", help="comma list of --seed values")
    p.add_argument("--quick", action="store_true", help="a few candidates only (a CPU check)")
    p.add_argument("--extra", action="append", default=[], metavar="LABEL=FLAGS",
                   help="another candidate, e.g. 'mine=--batch-size 512 --optimizer adamw' (repeatable)")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = candidates(args.quick) + [(e.split("=", 1)[0], e.split("=", 1)[1].split()) for e in args.extra]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "real"
        t10k.write_split(data, train=args.train, test=args.test)
        for label, flags in runs:
            for seed in seeds:
                metrics = Path(tmp) / "m.json"
                argv_run = ["--data-dir", str(data), "--epochs", str(args.epochs), "--device", args.device,
                            "--log-interval", "100000", "--seed", str(seed), "--metrics-json", str(metrics), *flags]
                began = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    code = mnist_classify.main(argv_run)
                if code != 0:
                    rows.append({"recipe": label, "seed": seed, "error": f"exit {code}"})
                    continue
                m = json.loads(metrics.read_text())
                rows.append({"recipe": label, "seed": seed, "final_acc": m["test_accuracy"],
                             "best_acc": max(m["epoch_test_accuracy"]), "train_s": round(sum(m["epoch_seconds"]), 2),
                             "wall_s": round(time.perf_counter() - began, 1), "flags": " ".join(flags),
                             "acc_by_epoch": " ".join(f"{a:.2f}" for a in m["epoch_test_accuracy"])})
                print(f"{label} seed {seed}: {rows[-1].get('final_acc')}", flush=True)
    table = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "recipe_sweep.csv", index=False)
    ok = table.dropna(subset=["final_acc"]) if "final_acc" in table else table.iloc[0:0]
    summary = ok.groupby("recipe", sort=False)["final_acc"].agg(["mean", "min", "max", "count"]).round(2)
    summary["train_s_mean"] = ok.groupby("recipe", sort=False)["train_s"].mean().round(2)
    print(summary.to_string())
    (args.out / "recipe_sweep.md").write_text(
        f"# Recipe sweep on real digits\n\n{args.train} train / {args.test} test, {args.epochs} epochs, "
        f"seeds {args.seeds}, device {args.device}\n\n" + markdown(summary.reset_index()))
    return 0 if "error" not in table or table["error"].isna().all() else 1


if __name__ == "__main__":
    sys.exit(main())
