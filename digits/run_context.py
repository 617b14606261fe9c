"""The facts a learner checks first on a cluster, printed at the top of every lesson script's run.

Which node, which Slurm job, how many CPUs the job may really use (Slurm's grant, not the node's
count), which GPUs are visible: most "why is my job slow" questions on a workshop's first day are
answered by these lines.
"""
from __future__ import annotations

import argparse
import os
import socket

import torch

from digits.data import data_source
from profiling.facts import cpus_from_env


def usable_cpus() -> int:
    """CPUs this process may use: Slurm's grant, else the affinity mask (os.cpu_count() counts the whole
    node). The profiler's own rule (profiling.facts.cpus_from_env), so the script and its report agree."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cpus, _ = cpus_from_env(os.environ, affinity)
    return cpus or 1  # no affinity API (macOS): assume the least rather than the whole machine


def run_context(args: argparse.Namespace, device: torch.device) -> dict:
    """The facts a learner checks first on a cluster: which node, which job, which CPUs and GPUs."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    return {"host": socket.gethostname(), "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "cpus_allowed": usable_cpus(), "gpus_visible": gpus,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "torch": torch.__version__, "device": str(device), "data_source": data_source(args)}


def print_context(ctx: dict) -> None:
    gpus = f"{len(ctx['gpus_visible'])} {ctx['gpus_visible']}" if ctx["gpus_visible"] else "none"
    rows = [("host", ctx["host"]), ("slurm job", ctx["slurm_job_id"] or "none (not inside a Slurm job)"),
            ("cpus allowed", ctx["cpus_allowed"]),
            ("gpus visible", f"{gpus} (CUDA_VISIBLE_DEVICES={ctx['cuda_visible_devices'] or 'unset'})"),
            ("torch", ctx["torch"]), ("device", ctx["device"]), ("data", ctx["data_source"])]
    print("== run context " + "=" * 50)
    for key, value in rows:
        print(f"  {key:<13}{value}")
    print("=" * 65, flush=True)
