"""The one CPU rule of the kit: a job's CPUs = its DataLoader workers + the main process's CPUs.

Why one module: the advice, job checker, sweep, templates, launcher and lesson script's `--num-workers auto` must
agree on "CPUs for N workers" and "workers for C CPUs". On a GPU with pinned memory the main process keeps two cores
busy: the training loop (its CUDA waits spin on a core) and the pin-memory thread that page-locks every batch. On an
H100 (16 cores) one worker held to 2 CPUs needed 12.3 ms a step but 9.5 ms with the node free (docs/profiling-model.md).

It imports nothing from the kit, so a job template can run it as a file before anything else:
    python "$DLKIT_ROOT/profiling/cpu_rule.py" workers CPUS [--gpus N] [--no-pin-memory]
    python "$DLKIT_ROOT/profiling/cpu_rule.py" cpus WORKERS [--gpus N] [--no-pin-memory]
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import suppress

def main_process_cpus(gpus: int, pin_memory: bool | None = None) -> int:
    """CPUs the training process itself keeps busy besides its DataLoader workers: two on a GPU with pinned memory."""
    return 2 if gpus >= 1 and pin_memory is not False else 1


def cpus_for_workers(workers: int, gpus: int, pin_memory: bool | None = None) -> int:
    """--cpus-per-task for `workers` workers (one CPU with num_workers=0: no pin-memory thread, no core to share)."""
    return workers + main_process_cpus(gpus, pin_memory) if workers >= 1 else 1


def workers_for_cpus(cpus: int, gpus: int, pin_memory: bool | None = None) -> int:
    """The most DataLoader workers that fit in `cpus` beside the main process."""
    return max(cpus - main_process_cpus(gpus, pin_memory), 0)


def first_cpus(count: int, mask: set[int] | None = None) -> set[int]:
    """The first `count` CPUs of `mask` (default: this process's): what `--cpus-per-task=count` would leave a job."""
    return set(sorted(os.sched_getaffinity(0) if mask is None else mask)[:max(count, 1)])


def job_cpus() -> int | None:
    """The CPUs this process (the job) may use: its affinity mask, never os.cpu_count(); None without a mask."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def hold_process(cpus: set[int]) -> None:
    """Every thread of this process (and its later forks) onto `cpus`, as a job given them has its threads:
    sched_setaffinity(0) moves only the calling thread, and torch's pool stayed where it was."""
    for task in os.listdir("/proc/self/task"):
        with suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task), cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cpu_rule", description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("workers", "cpus"),
                        help="workers: the workers that fit in N CPUs; cpus: the CPUs N workers need")
    parser.add_argument("n", type=int, help="CPUs (for `workers`) or workers (for `cpus`), >= 0")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs of the training process (default 1)")
    parser.add_argument("--no-pin-memory", action="store_true", help="the DataLoader does not pin memory")
    args = parser.parse_args(argv)
    if args.n < 0 or args.gpus < 0:
        parser.exit(2, f"cpu_rule: error: expected numbers >= 0, got {args.n} and --gpus {args.gpus}\n")
    rule = workers_for_cpus if args.what == "workers" else cpus_for_workers
    print(rule(args.n, args.gpus, False if args.no_pin_memory else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
