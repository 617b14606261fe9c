"""Turn benchmark result files into scaling tables: images/s, speed-up and efficiency per GPU count.

Reads the JSON written by ``resnet_bench.py --results-json`` and by ``mnist_ddp.py
--metrics-json``. Two views of the same runs (lesson 10, strong scaling):

* weak scaling: runs with the same batch PER GPU form a series (N GPUs do N times the work);
* strong scaling: runs with the same GLOBAL batch form a series (N GPUs split one step's work).

A series needs at least two GPU counts; its run with the fewest GPUs is the baseline. For strong
scaling the tool also says, per GPU count, the smallest per-GPU batch at which adding GPUs still
paid (efficiency at or above ``--pays``, 90 % by default: 1.8x on 2 GPUs).

    python -m multi_gpu.scaling results/*.json            # Markdown tables on stdout
    python -m multi_gpu.scaling --csv table.csv --plot scaling.png results/*.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd


def load_result(path: Path) -> dict:
    """One row: which benchmark, how many GPUs, how fast (both result formats)."""
    data = json.loads(Path(path).read_text())
    if "images_per_sec_total" in data:  # resnet_bench.py
        return {"benchmark": data["benchmark"], "gpus": data["world_size"],
                "batch_per_gpu": data["per_gpu_batch"],
                "global_batch": data.get("global_batch", data["per_gpu_batch"] * data["world_size"]),
                "images_per_sec": data["images_per_sec_total"],
                "device": data.get("device_name", ""), "file": str(path)}
    settings = data.get("settings", {})  # mnist_ddp.py
    return {"benchmark": "mnist-ddp" + ("-bf16" if settings.get("amp") else ""),
            "gpus": data["world_size"], "batch_per_gpu": data["local_batch_size"],
            "global_batch": data["global_batch_size"],
            "images_per_sec": data["images_per_sec"], "device": settings.get("device", ""),
            "file": str(path)}


def scaling_table(rows: list[dict], mode: str = "weak") -> pd.DataFrame:
    """Per-GPU throughput, speed-up and efficiency of each series against its smallest run.

    mode "weak": a series is one benchmark at one batch per GPU; "strong": at one global batch.
    Series with a single GPU count say nothing about scaling and are left out.
    """
    key = ["benchmark", "batch_per_gpu" if mode == "weak" else "global_batch"]
    table = pd.DataFrame(rows).drop_duplicates(subset=key + ["gpus"], keep="last")
    table = table.sort_values(key + ["gpus"]).reset_index(drop=True)
    table = table[table.groupby(key)["gpus"].transform("nunique") > 1].reset_index(drop=True)
    table["per_gpu"] = table["images_per_sec"] / table["gpus"]
    base = table.groupby(key)["per_gpu"].transform("first")
    base_gpus = table.groupby(key)["gpus"].transform("first")
    table["speedup"] = table["images_per_sec"] / (base * base_gpus)
    table["efficiency_pct"] = 100 * table["per_gpu"] / base
    return table


def where_it_stops_paying(strong: pd.DataFrame, pays_pct: float = 90.0) -> list[str]:
    """Per benchmark and GPU count: the smallest per-GPU batch that still paid, and the next one down."""
    lines = []
    for (name, gpus), rows in strong[strong["gpus"] > strong.groupby("benchmark")["gpus"].transform("min")] \
            .groupby(["benchmark", "gpus"]):
        paid = rows[rows["efficiency_pct"] >= pays_pct].sort_values("batch_per_gpu")
        missed = rows[rows["efficiency_pct"] < pays_pct].sort_values("batch_per_gpu")
        head = f"{name} on {gpus} GPUs: "
        if paid.empty:
            lines.append(head + f"never paid ({pays_pct:.0f} % efficiency) at the batches measured; "
                         f"best {rows['speedup'].max():.2f}x")
            continue
        low = paid.iloc[0]
        text = head + (f"pays down to {low.batch_per_gpu} images per GPU ({low.speedup:.2f}x, "
                       f"{low.efficiency_pct:.0f} %)")
        below = missed[missed["batch_per_gpu"] < low.batch_per_gpu]
        if below.empty:
            text += "; it never stopped paying at the batches measured"
        else:
            stop = below.iloc[-1]
            text += (f"; stops paying at {stop.batch_per_gpu} per GPU ({stop.speedup:.2f}x, "
                     f"{stop.efficiency_pct:.0f} %)")
        lines.append(text)
    return lines


def to_markdown(table: pd.DataFrame, mode: str = "weak") -> str:
    strong = mode == "strong"
    lines = ["| benchmark |" + (" global batch |" if strong else "") + " GPUs | batch/GPU | images/s total "
             "| images/s per GPU | speed-up | efficiency |",
             "|---|" + ("---:|" if strong else "") + "---:|---:|---:|---:|---:|---:|"]
    for row in table.itertuples():
        lines.append(f"| {row.benchmark} |" + (f" {row.global_batch} |" if strong else "")
                     + f" {row.gpus} | {row.batch_per_gpu} | {row.images_per_sec:,.0f} "
                     f"| {row.per_gpu:,.0f} | {row.speedup:.2f}x | {row.efficiency_pct:.1f} % |")
    return "\n".join(lines)


def plot(weak: pd.DataFrame, strong: pd.DataFrame, path: Path, pays_pct: float = 90.0) -> None:
    """Side by side: weak scaling (speed-up against GPUs) and strong scaling (efficiency against
    the per-GPU batch, one line per benchmark and GPU count: where it drops below the bar, more
    GPUs stopped paying)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    if not weak.empty:
        top = int(weak["gpus"].max())
        left.plot([1, top], [1, top], linestyle="--", color="grey", label="ideal")
        for (name, batch), rows in weak.groupby(["benchmark", "batch_per_gpu"]):
            left.plot(rows["gpus"], rows["speedup"], marker="o", label=f"{name}, {batch}/GPU")
        left.set_xticks(sorted(weak["gpus"].unique()))
        left.legend(fontsize=8)
    left.set_xlabel("GPUs")
    left.set_ylabel("speed-up (images/s vs. the smallest run)")
    left.set_title("weak scaling: fixed batch per GPU")
    right.axhline(pays_pct, linestyle="--", color="grey", label=f"pays ({pays_pct:.0f} %)")
    multi = strong[strong["gpus"] > strong.groupby("benchmark")["gpus"].transform("min")] \
        if not strong.empty else strong
    for (name, gpus), rows in multi.groupby(["benchmark", "gpus"]):
        rows = rows.sort_values("batch_per_gpu")
        right.plot(rows["batch_per_gpu"], rows["efficiency_pct"], marker="o", label=f"{name}, {gpus} GPUs")
    right.set_xscale("log", base=2)
    right.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())  # 64, not 2^6
    right.set_xlabel("batch per GPU (global batch / GPUs)")
    right.set_ylabel("efficiency vs. the fewest GPUs (%)")
    right.set_title("strong scaling: fixed global batch")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Weak and strong scaling tables from DDP benchmark results.")
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--csv", type=Path, default=None, help="both tables, with a `scaling` column")
    parser.add_argument("--plot", type=Path, default=None, help="write the side-by-side plot (PNG) here")
    parser.add_argument("--pays", type=float, default=90.0, metavar="PCT",
                        help="efficiency at which adding GPUs still pays (90: 1.8x on 2 GPUs)")
    args = parser.parse_args(argv)
    try:
        rows = [load_result(path) for path in args.results]
    except (OSError, ValueError, KeyError) as exc:
        print(f"scaling: error: cannot read a result file: {exc}", file=sys.stderr)
        return 2
    weak, strong = scaling_table(rows, "weak"), scaling_table(rows, "strong")
    for mode, table, fixed in (("weak", weak, "batch per GPU"), ("strong", strong, "global batch")):
        if table.empty:
            print(f"\n(no {mode}-scaling series: no two GPU counts at the same {fixed})")
            continue
        print(f"\n### {mode.capitalize()} scaling (fixed {fixed})\n")
        print(to_markdown(table, mode))
    if not strong.empty:
        print()
        print("\n".join(f"- {line}" for line in where_it_stops_paying(strong, args.pays)))
    if args.csv is not None:
        pd.concat([weak.assign(scaling="weak"), strong.assign(scaling="strong")]).to_csv(args.csv, index=False)
    if args.plot is not None:
        plot(weak, strong, args.plot, args.pays)
    return 0


if __name__ == "__main__":
    sys.exit(main())
