"""Slurm through submitit, in one place: the executor set-up, why a job is pending, the wait loop.

The job launcher (`python -m jobs submit`: single runs, DDP runs and the num_workers sweep) submits
through these. The profiler never submits: it runs inside a job.

Every submission gets a FRESH executor: submitit's `update_parameters` accumulates, so a reused
executor would carry an earlier setting's options into the next job.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# squeue reasons that mean a pending job will never start as submitted.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED", "UNKNOWN", "READY"})
NEVER_STARTS = ("PartitionConfig", "BadConstraints", "PartitionNodeLimit", "ReqNodeNotAvail", "InvalidQOS")


@dataclass(frozen=True)
class JobShape:
    """What one job asks for: the same knobs the sbatch templates set. None leaves Slurm's default."""

    name: str
    cpus_per_task: int = 1
    time_min: int = 20
    gpus_per_node: int | None = None
    tasks_per_node: int = 1
    nodes: int = 1
    mem_gb: int | None = None
    partition: str | None = None


def new_executor(folder: Path, shape: JobShape) -> Any:
    """A fresh submitit executor for one job (see the module docstring for why fresh)."""
    import submitit

    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    params: dict[str, Any] = {"name": shape.name, "nodes": shape.nodes, "tasks_per_node": shape.tasks_per_node,
                              "cpus_per_task": shape.cpus_per_task, "timeout_min": shape.time_min}
    if shape.mem_gb:
        params["mem_gb"] = shape.mem_gb
    if shape.gpus_per_node:
        params["gpus_per_node"] = shape.gpus_per_node
    if shape.partition:
        params["slurm_partition"] = shape.partition
    executor.update_parameters(**params)
    return executor


def submit_command(command: list[str], folder: Path, shape: JobShape) -> Any:
    """Submit one command line as a Slurm job, run in this directory; returns the submitit job."""
    from submitit.helpers import CommandFunction

    return new_executor(folder, shape).submit(CommandFunction(command, cwd=os.getcwd()))


def pending_reason(job_id: str) -> str:
    """Why Slurm keeps a job pending (empty when it is not pending or squeue cannot say)."""
    try:
        out = subprocess.run(["squeue", "-h", "-j", str(job_id), "-t", "PD", "-o", "%r"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def wait_until_done(job: Any, poll_s: float = 5.0) -> str | None:
    """Wait for a job to end; None when it did, else one line saying why it was cancelled instead.

    A job stuck pending for a reason that cannot clear (more CPUs than the partition allows...)
    is cancelled and reported rather than waited on forever.
    """
    while not job.done():
        reason = pending_reason(job.job_id)
        if reason.startswith(NEVER_STARTS):
            job.cancel(check=False)
            return f"job {job.job_id} can never start here (pending: {reason}); cancelled"
        time.sleep(poll_s)
    return None


def failure_line(job: Any, error: Exception) -> str:
    """One readable line: the script's own `error:` line if it printed one, else the exception's."""
    try:
        logged = Path(job.paths.stderr).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        logged = []
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    # "PROG: error: ..." as argparse and the kit's scripts print it, also when submitit's own error wraps it
    own = next((m.group(0) for line in reversed(logged) if not line.startswith("srun")
                for m in [re.search(r"[\w./-]+: error: .*", line)] if m), None)
    reason = own or next((line for line in reversed(lines) if re.match(r"^[\w.]+(Error|Exception)\b", line)),
                         type(error).__name__)
    return f"job {job.job_id} {final_state(job)}: {reason[:300]} (log: {job.paths.stderr})"


def final_state(job: Any, wait_s: float = 5.0) -> str:
    """Slurm's end state (FAILED, TIMEOUT, OUT_OF_MEMORY...). submitit caches sacct's answer and
    the failure pickle can land before the job ends, so ask again for a few seconds."""
    deadline = time.monotonic() + wait_s
    while True:
        job.watcher.update()
        state = str(job.state).split()[0]
        if state not in ACTIVE_STATES or time.monotonic() > deadline:
            return "FAILED" if state in ACTIVE_STATES else state
        time.sleep(0.5)


def wait_for_results(job: Any, poll_s: float = 5.0) -> tuple[list[Any] | None, str]:
    """The job's results (one per task), or None and one line saying why there are none: cancelled
    while pending for a reason that never clears (wait_until_done), or the job's own failure."""
    cancelled = wait_until_done(job, poll_s)
    if cancelled:
        return None, cancelled
    try:
        return job.results(), ""
    except Exception as error:  # FailedJobError / UncompletedJobError: the job's own failure
        return None, failure_line(job, error)
