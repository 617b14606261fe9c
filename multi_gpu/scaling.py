"""Turn benchmark result files into a scaling table: images/s, speed-up and efficiency per GPU count.

Reads the JSON written by ``resnet_bench.py --results-json`` and by ``mnist_ddp.py
--metrics-json``; the run with the fewest GPUs of each benchmark is the baseline.

    python -m multi_gpu.scaling results/*.json            # Markdown table on stdout
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
                "batch_per_gpu": data["per_gpu_batch"], "images_per_sec": data["images_per_sec_total"],
                "device": data.get("device_name", ""), "file": str(path)}
    settings = data.get("settings", {})  # mnist_ddp.py
    return {"benchmark": "mnist-ddp" + ("-bf16" if settings.get("amp") else ""),
            "gpus": data["world_size"], "batch_per_gpu": data["local_batch_size"],
            "images_per_sec": data["images_per_sec"], "device": settings.get("device", ""),
            "file": str(path)}


def scaling_table(rows: list[dict]) -> pd.DataFrame:
    """Add per-GPU throughput, speed-up and efficiency against each benchmark's smallest run."""
    table = pd.DataFrame(rows).sort_values(["benchmark", "gpus"]).reset_index(drop=True)
    table["per_gpu"] = table["images_per_sec"] / table["gpus"]
    base = table.groupby("benchmark")["per_gpu"].transform("first")
    base_gpus = table.groupby("benchmark")["gpus"].transform("first")
    table["speedup"] = table["images_per_sec"] / (base * base_gpus)
    table["efficiency_pct"] = 100 * table["per_gpu"] / base
    return table


def to_markdown(table: pd.DataFrame) -> str:
    lines = ["| benchmark | GPUs | batch/GPU | images/s total | images/s per GPU | speed-up | efficiency |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in table.itertuples():
        lines.append(f"| {row.benchmark} | {row.gpus} | {row.batch_per_gpu} | {row.images_per_sec:,.0f} "
                     f"| {row.per_gpu:,.0f} | {row.speedup:.2f}x | {row.efficiency_pct:.1f} % |")
    return "\n".join(lines)


def plot(table: pd.DataFrame, path: Path) -> None:
    """Speed-up against GPU count per benchmark, with the ideal (linear) line for reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    top = int(table["gpus"].max())
    ax.plot([1, top], [1, top], linestyle="--", color="grey", label="ideal")
    for name, rows in table.groupby("benchmark"):
        ax.plot(rows["gpus"], rows["speedup"], marker="o", label=name)
        for row in rows.itertuples():
            ax.annotate(f"{row.efficiency_pct:.0f} %", (row.gpus, row.speedup),
                        textcoords="offset points", xytext=(4, -12), fontsize=8)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("speed-up (images/s vs. the smallest run)")
    ax.set_xticks(sorted(table["gpus"].unique()))
    ax.set_title("DDP scaling, one host (labels: efficiency)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scaling table from DDP benchmark results.")
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--csv", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None, help="write a speed-up plot (PNG) here")
    args = parser.parse_args(argv)
    try:
        rows = [load_result(path) for path in args.results]
    except (OSError, ValueError, KeyError) as exc:
        print(f"scaling: error: cannot read a result file: {exc}", file=sys.stderr)
        return 2
    table = scaling_table(rows)
    print(to_markdown(table))
    if args.csv is not None:
        table.to_csv(args.csv, index=False)
    if args.plot is not None:
        plot(table, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
