"""What the checker's later stages find about a job, as plain data every stage can import.

`Started` (one Python launch: its shape and its loader's workers, filled in by `follow`) and `Need`
(a measured memory need, found by `measured`) live here, below both their producers and
`resources.Resources`, which carries them to the rules. So the stages import downwards only:
script, launch -> facts -> resources -> follow, measured -> rules -> cli.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jobs.launch import Launch
from jobs.workers_reader import Workers


@dataclass(frozen=True)
class Started:
    """One Python launch of the job, as the rules see it."""

    launch: Launch
    tasks_per_node: int            # Slurm tasks on one node running this command (1 without srun)
    procs_per_task: int | None     # processes each task starts (torchrun's --nproc-per-node), None unknown
    cpus_per_task: int | None      # CPUs the processes of one task share
    workers: Workers | None = None  # the DataLoader workers of each process, when known
    unread: str | None = None       # why the script was not read (missing, not Python, ...)
    path: Path | None = None        # the script file that was read

    @property
    def per_node(self) -> int | None:
        return None if self.procs_per_task is None else self.tasks_per_node * self.procs_per_task


@dataclass(frozen=True)
class Need:
    """Memory measured for one unit of the job (a process or a Slurm task), and where it came from."""

    mb: float
    per: str        # "process" (a kit profile of one process tree) or "task" (sacct MaxRSS)
    source: str
