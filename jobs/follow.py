"""Follow a job into the Python it starts: processes per node, CPUs per task, the loader's workers.

The checker's file-system stage, between describe (numbers from the #SBATCH lines) and the rules.
Each Python launch becomes a `Started`: how many processes it puts on a node (srun's tasks times
torchrun's --nproc-per-node), how many CPUs those processes share, and the DataLoader workers read
from the script's source by `jobs.workers_reader` (never by importing or running it), given the
Slurm CPU variables the process really sees (SLURM_CPUS_PER_TASK only where --cpus-per-task is
asked for). A worker count written on the job's command line (`--num-workers 4`) is used when the
script's own text does not settle it. Where a number cannot be known it stays None, and the rules
say nothing.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import replace
from pathlib import Path

from jobs.facts import Started
from jobs.launch import Launch, find_launches
from jobs.resources import Resources
from jobs.script import JobScript
from jobs.workers_reader import Workers, read_script

_WORKER_FLAGS = ("--num-workers", "--num_workers")
KIT_ROOT = Path(__file__).resolve().parents[1]


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _shape(job: JobScript, res: Resources, launch: Launch) -> tuple[int, int | None, int | None]:
    """(tasks per node, processes per task, CPUs per task) of one launch.

    A job that states no CPUs but asks for GPUs or a whole node gets what the site decides
    (DefCpuPerGPU, --exclusive): its CPUs are unknown here, not 1.
    """
    site_decides = not res.cpus_stated and (bool(res.gpus_per_node) or job.has("exclusive"))
    if launch.srun:
        options = dict(launch.srun_options)
        nodes = _int(options.get("nodes")) or res.nodes
        per_node, ntasks = _int(options.get("ntasks-per-node")), _int(options.get("ntasks"))
        tasks = per_node or (math.ceil(ntasks / nodes) if ntasks else res.tasks_per_node)
        cpus = _int(options.get("cpus-per-task")) if "cpus-per-task" in options else res.cpus_per_task
    else:  # the batch step holds every CPU the job has on its first node
        tasks = 1
        cpus = None if res.cpus_per_task is None else res.cpus_per_task * res.tasks_per_node
    if site_decides and not (launch.srun and "cpus-per-task" in dict(launch.srun_options)):
        cpus = None
    procs: int | None = None if launch.copies_unknown else 1
    if launch.launcher == "torchrun" and not launch.copies_unknown:
        nproc = launch.nproc_per_node
        if nproc is None:
            procs = 1  # torchrun's default
        elif nproc.isdigit():
            procs = int(nproc)
        elif (nproc in {"gpu", "auto"} or "GPUS" in nproc) and res.gpus_per_node:
            procs = max(res.gpus_per_node // max(tasks, 1), 1)  # each torchrun sees its task's GPUs
        else:
            procs = None
    return tasks, procs, cpus


def _cpu_variables(job: JobScript, res: Resources, launch: Launch, tasks: int, cpus: int | None) -> dict[str, int]:
    """The Slurm CPU variables one process of the launch sees, and their values; an unset one is absent.

    SLURM_CPUS_PER_TASK is set only when the job (or srun) asks for --cpus-per-task; it is the
    task's share even in the batch step. SLURM_CPUS_ON_NODE is the process's CPUs only where one
    task runs on the node."""
    env = {}
    srun_cpus = _int(dict(launch.srun_options).get("cpus-per-task")) if launch.srun else None
    if srun_cpus is not None:
        env["SLURM_CPUS_PER_TASK"] = srun_cpus
    elif job.has("cpus-per-task") and res.cpus_per_task is not None:
        env["SLURM_CPUS_PER_TASK"] = res.cpus_per_task
    if cpus is not None and tasks == 1 and res.tasks_per_node == 1 and srun_cpus is None and not job.has("exclusive"):
        env["SLURM_CPUS_ON_NODE"] = cpus
    return env


def _candidates(launch: Launch, roots: list[Path]) -> list[Path]:
    if launch.script is not None:
        path = Path(launch.script)
        return [path] if path.is_absolute() else [root / path for root in roots]
    parts = Path(*str(launch.module).split("."))
    return [root / p for root in roots for p in (parts.with_suffix(".py"), parts / "__main__.py")]


def _expand(path: str, submit_dir: Path) -> str:
    """$SLURM_SUBMIT_DIR is the submit folder, $DLKIT_ROOT the kit (as `dljobs sbatch` exports it);
    other variables come from this environment, which sbatch passes to the job by default."""
    known = {**os.environ, "SLURM_SUBMIT_DIR": str(submit_dir),
             "DLKIT_ROOT": os.environ.get("DLKIT_ROOT", str(KIT_ROOT))}
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: known.get(m.group(1), m.group(0)), path)


def _command_line_workers(launch: Launch) -> Workers | None:
    """`--num-workers N` on the job's command line: the kit's convention, also where the script's
    own text cannot settle the number (it passes the flag through a helper, or imports its loader)."""
    for i, arg in enumerate(launch.args):
        for flag in _WORKER_FLAGS:
            value = arg.split("=", 1)[1] if arg.startswith(flag + "=") else (
                launch.args[i + 1] if arg == flag and i + 1 < len(launch.args) else None)
            if value is not None and value.isdigit():
                return Workers(int(value), "the job's command line", f"{flag} {value}")
    return None


def _workers(launch: Launch, roots: list[Path], cpus_per_process: int | None, env: dict[str, int]
             ) -> tuple[Workers | None, str | None, Path | None]:
    """The launch's workers, a note when its script could not be read, and the file read."""
    given = _command_line_workers(launch)
    name = launch.script or f"-m {launch.module}"
    if "$" in name:  # a path through a variable: only the ones known before the job starts
        launch = replace(launch, script=_expand(name, roots[0]))
        if "$" in str(launch.script):
            return given, None, None  # not knowable here, and not the script's fault: say nothing
    found = next((p for p in _candidates(launch, roots) if p.is_file()), None)
    if found is None and launch.module is not None:
        return given, None, None  # an installed module (line_profiler, a pip package): not ours to read
    if found is None:
        where = " or ".join(dict.fromkeys(str(r) for r in roots))
        return given, f"{name} was not found (looked in {where}), so its DataLoader was not read", None
    read = read_script(found, list(launch.args), cpus_per_process, env)
    if read.problem:
        return given, read.problem.replace(str(found), name) + ": its DataLoader was not read", None
    if read.workers is not None and (read.workers.value is not None or read.workers.node_cores):
        return read.workers, None, found
    return given or read.workers, None, found


def follow(job: JobScript, res: Resources, root: Path) -> tuple[Started, ...]:
    """Every Python launch of the job, with its shape and its loader's workers.

    root is the directory the job will be submitted from (paths in the job are relative to it);
    the job script's own folder is tried next.
    """
    roots = [root]
    job_dir = Path(job.path).parent
    if job_dir.resolve() != root.resolve():
        roots.append(job_dir if job_dir.is_absolute() else root / job_dir)
    started = []
    for launch in find_launches(job.commands, job.script_args, job.command_lines):
        tasks, procs, cpus = _shape(job, res, launch)
        # Each process of a task sees the task's CPUs (SLURM_CPUS_PER_TASK, the affinity mask).
        workers, unread, path = _workers(launch, roots, cpus, _cpu_variables(job, res, launch, tasks, cpus))
        started.append(Started(launch, tasks, procs, cpus, workers, unread, path))
    return tuple(started)


def launches_only(job: JobScript, res: Resources) -> tuple[Started, ...]:
    """The launches without reading any file: workers from the job's command line only."""
    out = []
    for launch in find_launches(job.commands, job.script_args, job.command_lines):
        tasks, procs, cpus = _shape(job, res, launch)
        out.append(Started(launch, tasks, procs, cpus, _command_line_workers(launch)))
    return tuple(out)


