"""Gather a sweep array's results (one metrics JSON per task) into one table and plot.

The table, the knee, the plot and the writer of the sweep's files are profiling.sweep's own
(`write_outputs`, the one `dlkit-prof sweep` uses),
so the array and the submitit sweep cannot disagree on how a sweep is read. This module only
knows where the array's tasks left their files: <dir>/w<W>.json.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from profiling.cpu_rule import cpus_for_workers
from profiling.sweep import RESULT_COLUMNS, loop_times, median_of_repeats, read_metrics


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
        row = {"workers": w, "cpus": math.nan, "images_per_sec": math.nan, "epoch_seconds": math.nan,
               "compute_ms": math.nan, "wait_ms": math.nan, "status": "ok", "detail": str(path)}
        try:
            row["images_per_sec"], row["epoch_seconds"] = read_metrics(path)
            row["compute_ms"], row["wait_ms"] = loop_times(path)
            row["cpus"] = cpus_allowed(path, w)
        except FileNotFoundError:
            row.update(status="failed", detail=f"no {path.name}: the task for num_workers={w} failed "
                                               "or has not run (see its %x-%A_%a.out log)")
        except (OSError, ValueError, KeyError) as err:
            row.update(status="failed", detail=f"unreadable {path.name}: {err}")
        rows.append(row)
    table = median_of_repeats(rows)[list(RESULT_COLUMNS)]
    return table.astype({"cpus": "Int64"})  # whole CPUs; <NA> where the task left nothing


def cpus_allowed(path: Path, workers: int) -> int:
    """The CPUs the task's training really had (its srun step's mask, which the kit's scripts
    record); for a metrics file without it, what the template's rule gives a GPU task."""
    settings = json.loads(path.read_text(encoding="utf-8")).get("settings", {})
    return int(settings.get("cpus_allowed") or cpus_for_workers(workers, gpus=1))


def advice_from(lprof: Path | None) -> tuple[int | None, str]:
    """The report's num_workers advice for the profiled baseline, when one is given."""
    if lprof is None:
        return None, ""
    from profiling.report import build_report

    return build_report(lprof).advice.num_workers, f"advice of {lprof}"
