"""Backs docs/results.md, "Lesson 4 on real digits".
Lesson 1's recipe against the fast path, side by side: accuracy on real digits, time to a target, epoch time.

For each setting (lesson 1 as shipped, then the fast path one switch at a time):
- trains on the real split (the first 8,000 of MNIST's t10k digits, tested on the last 2,000;
  see digits/real.py) for --epochs, once per seed, testing after every epoch. From those runs:
  the final test accuracy, and the training time (test passes excluded) until the test accuracy
  first reaches --target;
- trains --speed-epochs epochs on 60,000 generated digits, the full MNIST size (no 60,000 real
  digits are available offline), and takes the last, warm epoch's time.
Every run is its own process (benchmarks/mnist_epoch.run_one), so none inherits another's caches.

On the GPU machine (offline; needs torch, torchvision, pandas):
    python benchmarks/time_to_accuracy.py --out-dir runs/tta
A quick check on a CPU-only machine:
    python benchmarks/time_to_accuracy.py --device cpu --train 256 --test 200 --epochs 1 --seeds 1 \
        --speed-samples 256 --speed-epochs 1 --batch-size 128 --target 10 --only 0,3
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from digits import real as t10k  # noqa: E402
from digits import synthetic  # noqa: E402
from benchmarks.mnist_epoch import markdown, run_one  # noqa: E402

# The recipe chosen with benchmarks/recipe_sweep.py (docs/results/h100-recipe-sweep.md).
TUNED = "--optimizer adamw --lr 2e-3 --lr-scaling sqrt --schedule warmup-cosine --warmup-epochs 1"


def settings(batch: int, tuned: str, big: int) -> list[tuple[str, list[str]]]:
    """(label, flags): lesson 1's baseline as shipped, then one switch more per row, then a larger batch."""
    fast = ["--gpu-resident", "--amp", "--batch-size", str(batch)]
    best = [*tuned.split(), "--cuda-graph", "--channels-last", "--cudnn-benchmark"]
    return [
        ("lesson 1 (pytorch/examples recipe, DataLoader)", []),
        ("data on the GPU", ["--gpu-resident"]),
        (f"+ bf16, batch {batch}", fast),
        ("+ large-batch recipe", [*fast, *tuned.split()]),
        ("+ CUDA graph", [*fast, *tuned.split(), "--cuda-graph"]),
        ("+ channels_last", [*fast, *tuned.split(), "--cuda-graph", "--channels-last"]),
        ("+ cuDNN autotune", [*fast, *best]),
        (f"all of it at batch {big}", ["--gpu-resident", "--amp", "--batch-size", str(big), *best]),
    ]


def time_to_target(metrics: dict, target: float) -> tuple[int | None, float | None]:
    """(epoch, training seconds up to the end of it) when the test accuracy first reached target."""
    spent = 0.0
    for epoch, (seconds, accuracy) in enumerate(zip(metrics["epoch_seconds"], metrics["epoch_test_accuracy"]), 1):
        spent += seconds
        if accuracy >= target:
            return epoch, spent
    return None, None


def accuracy_runs(args, label: str, flags: list[str], data_dir: Path, tmp: Path) -> dict:
    """The real-digit runs of one setting, one per seed, summarised."""
    run_args = argparse.Namespace(epochs=args.epochs, device=args.device)
    finals, epochs_to, times_to, errors, curves = [], [], [], [], []
    for seed in args.seeds:
        metrics = tmp / f"acc-{abs(hash(label))}-{seed}.json"
        row = run_one(run_args, label, [*flags, "--seed", str(seed)], metrics, args.run_timeout_s,
                      data_flags=["--data-dir", str(data_dir)])
        if "error" in row:
            errors.append(f"seed {seed}: {row['error']}")
            continue
        m = json.loads(metrics.read_text())
        finals.append(m["test_accuracy"])
        curves.append(m["epoch_test_accuracy"])
        epoch, seconds = time_to_target(m, args.target)
        epochs_to.append(epoch)
        times_to.append(seconds)
    reached = [t for t in times_to if t is not None]
    return {
        "final_acc_mean": round(sum(finals) / len(finals), 2) if finals else None,
        "final_acc_each": " ".join(f"{a:.2f}" for a in finals),
        "epochs_to_target": " ".join("-" if e is None else str(e) for e in epochs_to),
        "time_to_target_s": (round(sum(reached) / len(reached), 2)
                             if reached and len(reached) == len(times_to) else None),
        "acc_by_epoch_seed1": " ".join(f"{a:.2f}" for a in curves[0]) if curves else "",
        "error": "; ".join(errors) or None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", type=Path, default=Path("runs/time-to-accuracy"))
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu", "auto", "mps"])
    p.add_argument("--train", type=int, default=t10k.TRAIN, help="real training digits (the first N)")
    p.add_argument("--test", type=int, default=t10k.TEST, help="real test digits (the last N)")
    p.add_argument("--epochs", type=int, default=14, help="epochs of each real-digit run")
    p.add_argument("--seeds", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2, 3])
    p.add_argument("--target", type=float, default=98.0, help="test accuracy (%%) for time-to-accuracy")
    p.add_argument("--batch-size", type=int, default=512, help="batch of the fast path")
    p.add_argument("--big-batch", type=int, default=1024, help="batch of the last row")
    p.add_argument("--tuned", default=TUNED, help="the large-batch recipe's flags")
    p.add_argument("--speed-samples", type=int, default=60_000, help="generated digits for the epoch-time runs")
    p.add_argument("--speed-epochs", type=int, default=2, help="epochs of each timing run (the last is warm)")
    p.add_argument("--only", type=lambda t: [int(x) for x in t.split(",")], default=None,
                   help="comma list of setting numbers to run (0 = lesson 1's baseline)")
    p.add_argument("--run-timeout-s", type=float, default=240)
    p.add_argument("--replot", type=Path, default=None, metavar="CSV",
                   help="only redraw the figure from a time_to_accuracy.csv (next to it, as .png)")
    args = p.parse_args(argv)
    if args.replot is not None:
        plot(pd.read_csv(args.replot), args.replot.with_suffix(".png"), args.target)
        return 0

    began = time.perf_counter()
    chosen = settings(args.batch_size, args.tuned, args.big_batch)
    chosen = [chosen[i] for i in args.only] if args.only else chosen
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        real = tmp / "real"
        t10k.write_split(real, train=args.train, test=args.test)
        synthetic.ensure(tmp / "synthetic" / "MNIST" / "raw", args.speed_samples, 1000, seed=0)
        speed_args = argparse.Namespace(epochs=args.speed_epochs, device=args.device, data_dir=tmp,
                                        train_samples=args.speed_samples, test_samples=1000)
        for label, flags in chosen:
            speed = run_one(speed_args, label, flags, tmp / "speed.json", args.run_timeout_s)
            row = {"setting": label, "flags": " ".join(flags),
                   "warm_epoch_s": speed.get("warm_epoch_s"), "epoch1_s": speed.get("epoch1_s"),
                   "warm_images_per_s": speed.get("warm_images_per_s"),
                   **accuracy_runs(args, label, flags, real, tmp)}
            if "error" in speed:
                row["error"] = f"timing run: {speed['error']}" + (f"; {row['error']}" if row["error"] else "")
            row["gpu"] = speed.get("gpu")
            rows.append(row)
            write_tables(args, rows, began, argv)  # after every row: a run cut short keeps what it measured
            print(f"  {label}: warm epoch {row['warm_epoch_s']} s, accuracy {row['final_acc_mean']} "
                  f"({row['final_acc_each']}), to {args.target}%: {row['time_to_target_s']} s"
                  + (f" ERROR {row['error']}" if row["error"] else ""), flush=True)

    table = write_tables(args, rows, began, argv)
    plot(table, args.out_dir / "time_to_accuracy.png", args.target)
    print(table.drop(columns=["flags", "acc_by_epoch_seed1", "gpu"]).to_string(index=False))
    print(f"\nwrote {args.out_dir / 'time_to_accuracy.csv'} and {args.out_dir / 'time_to_accuracy.md'}")
    return 1 if table["error"].notna().any() else 0


def write_tables(args: argparse.Namespace, rows: list[dict], began: float, argv: list[str] | None) -> pd.DataFrame:
    """The rows so far as CSV and Markdown, with speed-ups against the first row (lesson 1's baseline)."""
    table = pd.DataFrame(rows)
    base = table.iloc[0]
    table.insert(3, "speedup", (base["warm_epoch_s"] / table["warm_epoch_s"]).round(1))
    tta = pd.to_numeric(table["time_to_target_s"], errors="coerce")
    table.insert(table.columns.get_loc("time_to_target_s") + 1, "tta_speedup", (tta.iloc[0] / tta).round(1))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out_dir / "time_to_accuracy.csv", index=False)
    header = (f"# Time to accuracy on real digits\n\nhost `{platform.node()}`, python {platform.python_version()}, "
              f"GPU {base.get('gpu')}; accuracy: {args.train} train / {args.test} test real digits, {args.epochs} "
              f"epochs, seeds {','.join(map(str, args.seeds))}, target {args.target} %; epoch time: warm epoch "
              f"{args.speed_epochs} of {args.speed_samples} generated digits; total "
              f"{time.perf_counter() - began:.0f} s\n\n`python benchmarks/time_to_accuracy.py "
              f"{' '.join(sys.argv[1:] if argv is None else argv)}`\n\n")
    (args.out_dir / "time_to_accuracy.md").write_text(header + markdown(table.drop(columns=["gpu"])))
    return table


def plot(table: pd.DataFrame, path: Path, target: float) -> None:
    """Left: test accuracy after each epoch (first seed); right: warm epoch time, with final accuracy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for _, row in table.iterrows():
        if isinstance(row["acc_by_epoch_seed1"], str) and row["acc_by_epoch_seed1"]:
            curve = [float(a) for a in row["acc_by_epoch_seed1"].split()]
            left.plot(range(1, len(curve) + 1), curve, marker=".", label=row["setting"])
    left.axhline(target, color="grey", linestyle=":", linewidth=1)
    left.set(xlabel="epoch", ylabel="test accuracy on 2,000 real digits (%)", ylim=(96, 99.5),
             title="accuracy after each epoch (seed 1)")
    left.legend(fontsize=7, loc="lower right")
    labels = table["setting"].tolist()[::-1]
    right.barh(labels, table["warm_epoch_s"].tolist()[::-1], color="tab:blue")
    for y, (_, row) in enumerate(table.iloc[::-1].iterrows()):
        right.text(row["warm_epoch_s"], y, f" {row['warm_epoch_s']:.3f} s, {row['final_acc_mean']:.2f} %",
                   va="center", fontsize=8)
    right.set_xscale("log")
    right.set(xlabel="warm epoch of 60,000 digits (s, log scale)", title="epoch time and final accuracy")
    right.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
