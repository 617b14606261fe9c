"""`dlkit-prof compare BEFORE.lprof AFTER.lprof`: the speedup per phase and overall.

Why per batch when possible: the "after" run is often shorter or longer (batch size, --max-steps), so raw seconds would
reward running less. With both batch counts known it compares ms per batch; otherwise seconds, and says which.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from profiling.plots import PHASE_COLOURS, new_figure
from profiling.records import PHASES
from profiling.render import _md_table

COLUMNS = ("phase", "before", "after", "speedup")


def _per_batch_known(phases: pd.DataFrame) -> bool:
    col = phases.get("per_batch_ms")
    return col is not None and bool(col.notna().all()) and bool((col[phases["seconds"] > 0] > 0).all())


def compare_phases(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Join two phase tables; returns (table with `overall` last, the unit compared)."""
    per_batch = _per_batch_known(before) and _per_batch_known(after)
    column, unit = ("per_batch_ms", "ms per batch") if per_batch else ("seconds", "seconds")
    table = pd.DataFrame({"before": before.set_index("phase")[column], "after": after.set_index("phase")[column]})
    order = [p for p in PHASES if p in table.index] + sorted(set(table.index) - set(PHASES))
    table = table.reindex(order).fillna(0.0).astype(float).rename_axis("phase").reset_index()
    table = table[(table["before"] > 0) | (table["after"] > 0)]
    overall = pd.DataFrame({"phase": ["overall"], "before": [table["before"].sum()], "after": [table["after"].sum()]})
    table = pd.concat([table, overall], ignore_index=True)
    table["speedup"] = [b_ / a_ if a_ > 0 else math.inf if b_ > 0 else math.nan
                        for b_, a_ in zip(table["before"], table["after"])]
    return table, unit


def format_text(table: pd.DataFrame, unit: str, before: Path, after: Path) -> str:
    shown = table.assign(speedup=[f"{s:.2f}x" if math.isfinite(s) else "-" for s in table["speedup"]])
    body = shown.to_string(index=False, float_format=lambda v: f"{v:.3f}")
    return (f"before: {before}\nafter:  {after}\n(compared in {unit}; speedup = before / after)\n\n{body}\n")


def plot_compare(table: pd.DataFrame, unit: str, path: Path) -> Path:
    """Paired bars per phase, each pair labelled with its speedup."""
    rows = table.iloc[::-1].reset_index(drop=True)
    ax = new_figure(9, 0.6 * len(rows) + 1.5).add_subplot()
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], rows["before"], height=0.4, color="#bbbbbb", label="before")
    ax.barh([i - 0.2 for i in y], rows["after"], height=0.4,
            color=[PHASE_COLOURS.get(p, "#333333") for p in rows["phase"]], label="after")
    for i, (top, s) in enumerate(zip(rows[["before", "after"]].max(axis=1), rows["speedup"])):
        ax.annotate(f" {s:.2f}x" if math.isfinite(s) else " -", (top, i), va="center", fontsize=9)
    ax.set_yticks(list(y), rows["phase"])
    ax.set(xlabel=unit, title="Before vs after, by phase (label: speedup)", xmargin=0.15)
    ax.legend(fontsize=8, loc="lower right")
    ax.figure.savefig(path)
    return path


def compare_command(args: argparse.Namespace) -> int:
    """Print the comparison; with --output-dir also write CSV, text and PNG."""
    from profiling.report import build_report  # (load_lprof says what is wrong with a missing or bad file)

    before, after = build_report(args.before), build_report(args.after)
    table, unit = compare_phases(before.phases, after.phases)
    if args.format == "json":
        print(json.dumps({"unit": unit, "before": str(args.before), "after": str(args.after),
                          "phases": json.loads(table.to_json(orient="records"))}, indent=2))
    elif args.format == "md":
        print(f"Compared in {unit}; speedup = before / after.\n")
        rows = [[r.phase, f"{r.before:.3f}", f"{r.after:.3f}", f"{r.speedup:.2f}x" if math.isfinite(r.speedup) else "-"]
                for r in table.itertuples()]
        print("\n".join(_md_table(COLUMNS, rows)))
    else:
        print(format_text(table, unit, args.before, args.after))
    if args.output_dir is not None:
        (out := Path(args.output_dir)).mkdir(parents=True, exist_ok=True)
        stem = f"{Path(args.before).stem}_vs_{Path(args.after).stem}"
        table.to_csv(out / f"{stem}.compare.csv", index=False)
        (out / f"{stem}.compare.txt").write_text(format_text(table, unit, args.before, args.after), encoding="utf-8")
        png = plot_compare(table, unit, out / f"{stem}.compare.png")
        print(f"wrote {out / (stem + '.compare.csv')}, {out / (stem + '.compare.txt')} and {png}")
    return 0
