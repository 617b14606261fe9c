"""Gather a sweep array's results (one metrics JSON per task) into one table and plot.

The table, the knee and the plot are profiling.sweep's own (the same ones `dlprof sweep` writes),
so the array and the submitit sweep cannot disagree on how a sweep is read. This module only
knows where the array's tasks left their files: <dir>/w<W>.json.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from profiling.sweep import RESULT_COLUMNS, best_of_repeats, pick_knee, plot_sweep, read_metrics, summary


def parse_workers(text: str) -> list[int]:
    """"0,1,2,4" -> [0, 1, 2, 4]; raises ValueError with a readable message."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--workers must be comma-separated integers, got {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise ValueError(f"--workers must list at least one count >= 0, got {text!r}")
    return values


def collect(directory: Path, workers: list[int]) -> pd.DataFrame:
    """One row per setting; a setting whose task left no usable metrics is a 'failed' row."""
    rows = []
    for w in workers:
        path = directory / f"w{w}.json"
        row = {"workers": w, "cpus": w + 1, "images_per_sec": math.nan, "epoch_seconds": math.nan,
               "status": "ok", "detail": str(path)}
        try:
            row["images_per_sec"], row["epoch_seconds"] = read_metrics(path)
        except FileNotFoundError:
            row.update(status="failed", detail=f"no {path.name}: the task for num_workers={w} failed "
                                               "or has not run (see its %x-%A_%a.out log)")
        except (OSError, ValueError, KeyError) as err:
            row.update(status="failed", detail=f"unreadable {path.name}: {err}")
        rows.append(row)
    return best_of_repeats(rows)[list(RESULT_COLUMNS)]


def write_outputs(directory: Path, results: pd.DataFrame, advice: int | None = None,
                  advice_source: str = "") -> str:
    """Write sweep.csv/.txt/.json/.png next to the task files; returns the text summary."""
    knee = pick_knee(results)
    text = summary(results, knee, advice, advice_source)
    results.to_csv(directory / "sweep.csv", index=False)
    (directory / "sweep.txt").write_text(text, encoding="utf-8")
    (directory / "sweep.json").write_text(json.dumps({
        "knee": knee, "advice": advice, "advice_source": advice_source,
        "results": json.loads(results.to_json(orient="records"))}, indent=2) + "\n", encoding="utf-8")
    plot_sweep(results, knee, advice, directory / "sweep.png")
    return text


def advice_from(lprof: Path | None) -> tuple[int | None, str]:
    """The report's num_workers advice for the profiled baseline, when one is given."""
    if lprof is None:
        return None, ""
    from profiling.report import build_report

    return build_report(lprof).advice.num_workers, f"advice of {lprof}"
