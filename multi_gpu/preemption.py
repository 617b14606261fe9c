"""Notice a preemption signal, agree on it across ranks, and hand the job back to Slurm.

The signal handler only sets a flag: checkpointing inside a handler could interrupt a half-done
optimizer step. The training loop asks ``stop_requested()`` at every step boundary.

DataLoader workers must survive the signal: Slurm signals every process of the step, and a dead
worker makes the main process fail with "DataLoader worker ... killed by signal" before it can
checkpoint. Two guards: the handler remembers the pid that installed it and does nothing in any
other (forked) process, and ``shield_workers`` sets a ``worker_init_fn`` that ignores the signals,
because torch's workers install their own C-level SIGTERM handler that kills them.

Slurm may deliver the signal to the ranks at slightly different moments, or to one rank only
(``--signal=B:...`` plus a forwarding trap). With several ranks the flag is all-reduced (max) at
every step boundary, so all ranks stop after the same step and write one consistent checkpoint.
"""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import Any, Callable

import torch

DEFAULT_SIGNALS = (signal.SIGUSR1, signal.SIGTERM)


class PreemptionGuard:
    """Records a preemption signal in the main process; ranks agree on it at step boundaries."""

    def __init__(self, signals: tuple[signal.Signals, ...] = DEFAULT_SIGNALS) -> None:
        self.signals = signals
        self.owner_pid = os.getpid()
        self.signal_name: str | None = None
        self.received_at: float | None = None  # time.monotonic() of the first signal
        self._previous: dict[int, object] = {}

    def install(self) -> "PreemptionGuard":
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if os.getpid() != self.owner_pid:
            return  # a forked DataLoader worker: not ours to act on
        if self.signal_name is None:
            self.signal_name = signal.Signals(signum).name
            self.received_at = time.monotonic()

    @property
    def local_request(self) -> bool:
        return self.signal_name is not None

    def stop_requested(self, device: torch.device, distributed: bool) -> bool:
        """True on every rank as soon as any rank has seen a signal."""
        if not distributed:
            return self.local_request
        import torch.distributed as dist

        flag = torch.tensor([1 if self.local_request else 0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())


def _ignore_then(previous: Callable[[int], None] | None, worker_id: int) -> None:
    for sig in DEFAULT_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    if previous is not None:
        previous(worker_id)


def shield_workers(loader: Any) -> None:
    """Let this DataLoader's workers ignore SIGUSR1/SIGTERM; the main process stops them itself.

    A ``functools.partial`` of a module function (not a closure) stays picklable for the
    ``spawn`` start method. Any ``worker_init_fn`` already set still runs afterwards.
    """
    loader.worker_init_fn = functools.partial(_ignore_then, loader.worker_init_fn)


def requeue_slurm_job() -> bool:
    """Ask Slurm to put this job back in the queue; False outside Slurm or when it refuses.

    ``scontrol requeue`` needs the job to allow requeueing (``#SBATCH --requeue``, or the
    cluster's default); the requeued job starts again from the top of the batch script, and
    the training script resumes from the newest checkpoint.
    """
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return False
    try:
        result = subprocess.run(
            ["scontrol", "requeue", job_id], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"preemption: scontrol requeue {job_id} failed: {exc}", file=sys.stderr)
        return False
    if result.returncode != 0:
        print(
            f"preemption: scontrol requeue {job_id} failed: {result.stderr.strip()}",
            file=sys.stderr,
        )
        return False
    return True
