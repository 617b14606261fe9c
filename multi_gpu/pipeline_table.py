"""Put pipeline runs side by side: throughput, memory per GPU, bubble, and the share of ideal.

Reads the ``--results-json`` files of ``multi_gpu/pipeline.py``. A run with ``--alone`` (each
stage trained by itself, no neighbours) gives the ideal for the pipeline runs of the same model,
layout and microbatch count: what the stages would deliver with no bubble and no sends.

    python -m multi_gpu.pipeline_table results/*.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _key(r: dict) -> tuple:
    return (r["model"], r["pipelines"], r["stages"], r["microbatches"], r["global_batch"])


def rows(results: list[dict]) -> list[dict]:
    """One row per DDP or pipeline run, with its ideal from the matching --alone run."""
    ideal = {_key(r): r["samples_per_sec"] for r in results if r["mode"] == "alone"}
    out = []
    order = sorted(results, key=lambda r: (r["model"], r["mode"] != "ddp", r["pipelines"], r["microbatches"]))
    for r in order:
        if r["mode"] == "alone":
            continue
        best = ideal.get(_key(r)) if r["mode"] == "pipeline" else None
        peaks = [p["peak_gib"] for p in sorted(r["per_rank"], key=lambda p: p["rank"])]
        out.append({
            "model": r["model"],
            "layout": f"DDP x {r['pipelines']}" if r["mode"] == "ddp" else f"{r['pipelines']} x {r['stages']}",
            "schedule": r["schedule"] or "-",
            "microbatches": r["microbatches"] if r["mode"] == "pipeline" else "-",
            "global_batch": r["global_batch"],
            "samples_per_sec": r["samples_per_sec"],
            "peak_gib": " / ".join("-" if p is None else f"{p:.1f}" for p in peaks),
            "bubble_theory": r["bubble_theory"] if r["mode"] == "pipeline" else None,
            "ideal": best,
        })
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| model | layout | schedule | microbatches | global batch | samples/s | peak GiB per GPU "
             "| bubble (S-1)/(M+S-1) | ideal samples/s (stages alone) | of ideal |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for r in table:
        bubble = "-" if r["bubble_theory"] is None else f"{100 * r['bubble_theory']:.1f} %"
        ideal = "-" if r["ideal"] is None else f"{r['ideal']:,.0f}"
        share = "-" if r["ideal"] is None else f"{100 * r['samples_per_sec'] / r['ideal']:.1f} %"
        lines.append(f"| {r['model']} | {r['layout']} | {r['schedule']} | {r['microbatches']} | "
                     f"{r['global_batch']} | {r['samples_per_sec']:,.0f} | {r['peak_gib']} | {bubble} | "
                     f"{ideal} | {share} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multi_gpu.pipeline_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="--results-json files of pipeline.py")
    args = parser.parse_args(argv)
    try:
        results = [json.loads(p.read_text()) for p in args.results]
    except (OSError, ValueError) as exc:
        print(f"pipeline_table: error: {exc}", file=sys.stderr)
        return 2
    print(markdown(rows(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
