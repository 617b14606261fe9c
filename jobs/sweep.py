"""The num_workers sweep as Slurm jobs: `python -m jobs submit sweep [--script FILE] -- ARGS`.

One job per setting and repeat, each from a fresh submitit executor (jobs.slurm), asking for
cpus_per_task = workers + the main process's CPUs (the kit's one CPU rule). What a setting runs, how its
result is read and how the table, knee and plot are written are profiling.sweep's, so a sweep here and
`python -m profiling sweep` on one node give the same files.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from jobs.slurm import JobShape, submit_command, wait_for_results
from profiling.sweep import Setting, result_row, settings_for, summarise


def wait_job(job: Any, poll_s: float = 5.0) -> tuple[str, str]:
    """("ok" | "failed", a one-line detail naming the job and its log)."""
    results, why = wait_for_results(job, poll_s)
    return ("failed", why) if results is None else ("ok", f"job {job.job_id}")


def run_settings(settings: list[Setting], time_min: int, gpus: int | None) -> list[dict]:
    """Submit every setting as its own job, then wait for all; a setting sbatch refuses is a failed row."""
    jobs: list[Any] = []
    for s in settings:
        s.log.parent.mkdir(parents=True, exist_ok=True)
        shape = JobShape(name=f"sweep-w{s.workers}", cpus_per_task=s.cpus, time_min=time_min, gpus_per_node=gpus)
        try:
            job = submit_command(s.command, s.log.parent / "slurm", shape)
            print(f"sweep: workers={s.workers} submitted as job {job.job_id} (cpus_per_task={s.cpus})", flush=True)
        except Exception as err:  # sbatch refused it (e.g. more CPUs than any node has)
            job = f"could not submit: {' '.join(str(err).split())[:300]}"
        jobs.append(job)
    return [result_row(s, s.cpus, *(("failed", job) if isinstance(job, str) else wait_job(job)))
            for s, job in zip(settings, jobs)]


def run_sweep(args: argparse.Namespace, folder: Path, script: Path, workers: list[int]) -> pd.DataFrame:
    """Every setting, pass after pass (`--repeats`), then the median table, the knee and the plot; with
    `--lprof`, that profile's advice beside the knee."""
    advice, source = None, ""
    if args.lprof is not None:  # read first: a bad profile is refused before any job is submitted
        from profiling.report import build_report

        advice, source = build_report(args.lprof).advice.num_workers, f"advice of {args.lprof}"
    command = [str(script), *args.script_args]
    settings = settings_for(command, workers, folder, min(args.gpus, 1), args.batches, args.repeats)
    results, text = summarise(folder, run_settings(settings, args.time_min, args.gpus or None), advice, source)
    print(text, flush=True)
    return results
