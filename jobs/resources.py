"""What a parsed job asks for and what it runs, as plain numbers the rules can compare.

Stage two of the checker: JobScript (text) -> Resources (numbers and flags). Values that a
script only knows at run time (`--num-workers "$w"`, `--nproc_per_node=$SLURM_GPUS_ON_NODE`)
become None, and the rules skip them rather than guess.
"""
from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from jobs.script import JobScript

# Slurm's accepted --time forms (see `man sbatch`), plus the unlimited keywords.
TIME_FORMS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"\d+",                       # minutes
    r"\d+:\d+",                   # minutes:seconds
    r"\d+:\d+:\d+",               # hours:minutes:seconds
    r"\d+-\d+",                   # days-hours
    r"\d+-\d+:\d+",               # days-hours:minutes
    r"\d+-\d+:\d+:\d+",           # days-hours:minutes:seconds
    r"(?i:unlimited|infinite)",
))
MEMORY = re.compile(r"^(\d+)([KMGT]?)B?$", re.IGNORECASE)  # sbatch also takes "4GB"
_MB_PER_UNIT = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024.0}
_WORKERS = re.compile(r"^--num[-_]workers(?:=(.*))?$")
_NPROC = re.compile(r"^--nproc[-_]per[-_]node(?:=(.*))?$")


@dataclass(frozen=True)
class Resources:
    """The numbers the rules compare. None means "not stated" or "only known at run time"."""

    nodes: int
    nodes_stated: bool
    ntasks: int | None
    ntasks_per_node: int | None
    tasks_per_node: int                # what each node really runs (ntasks-per-node, else ntasks/nodes)
    cpus_per_task: int | None          # None when the value is not a number
    cpus_stated: bool
    gpus_per_node: int | None
    gpu_option: str | None             # the option that asked for GPUs, for messages
    num_workers: int | str | None      # an int, "auto", or None when unknown / not given
    uses_srun: bool
    uses_torchrun: bool
    nproc_per_node: int | None
    is_ddp: bool
    mem_mb_per_node: float | None      # --mem, or --mem-per-cpu x cpus, or --mem-per-gpu x gpus


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _count_after_colon(item: str) -> int:
    """`gpu` -> 1, `gpu:4` -> 4, `gpu:a100:4` -> 4, `a100:2` -> 2 (gres and --gpus* forms)."""
    last = item.split(":")[-1]
    return int(last) if last.isdigit() else 1


def _gpus_per_node(job: JobScript, nodes: int, tasks_per_node: int) -> tuple[int | None, str | None]:
    gres = job.get("gres")
    if gres:
        gpu_items = [g for g in gres.split(",") if g.split(":")[0] == "gpu"]
        if gpu_items:
            return sum(_count_after_colon(g) for g in gpu_items), f"--gres={gres}"
    for name in ("gpus-per-node", "gpus", "gpus-per-task"):
        value = job.get(name)
        if not value:
            continue
        count = _count_after_colon(value.split(",")[0])
        if name == "gpus":
            count = math.ceil(count / max(nodes, 1))
        elif name == "gpus-per-task":
            count *= tasks_per_node
        return count, f"--{name}={value}"
    return None, None


def memory_mb(value: str) -> float | None:
    """A Slurm memory value in megabytes (no unit means megabytes), or None if malformed."""
    match = MEMORY.match(value.strip())
    if not match:
        return None
    return int(match.group(1)) * _MB_PER_UNIT[(match.group(2) or "M").upper()]


def _memory_per_node(job: JobScript, cpus_per_node: int, gpus_per_node: int | None) -> float | None:
    mem = job.get("mem")
    if mem:
        return memory_mb(mem)
    per_cpu = job.get("mem-per-cpu")
    if per_cpu and memory_mb(per_cpu) is not None:
        return memory_mb(per_cpu) * cpus_per_node  # type: ignore[operator]
    per_gpu = job.get("mem-per-gpu")
    if per_gpu and gpus_per_node and memory_mb(per_gpu) is not None:
        return memory_mb(per_gpu) * gpus_per_node  # type: ignore[operator]
    return None


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def _flag_value(words: list[str], pattern: re.Pattern[str]) -> list[str]:
    """Every value given to a flag, in either `--flag=v` or `--flag v` form."""
    values = []
    for i, word in enumerate(words):
        match = pattern.match(word)
        if match:
            value = match.group(1)
            if value is None and i + 1 < len(words):
                value = words[i + 1]
            if value is not None:
                values.append(value)
    return values


def _workers(values: list[str]) -> int | str | None:
    if not values:
        return None
    if all(v.isdigit() for v in values):
        return max(int(v) for v in values)
    return "auto" if all(v == "auto" for v in values) else None


def describe(job: JobScript) -> Resources:
    """Reduce a parsed job to the numbers the rules need."""
    nodes_value = job.get("nodes")
    nodes = _int((nodes_value or "1").split("-")[0]) or 1
    ntasks, ntasks_per_node = _int(job.get("ntasks")), _int(job.get("ntasks-per-node"))
    tasks_per_node = ntasks_per_node or (math.ceil(ntasks / nodes) if ntasks else 1)
    cpus_value = job.get("cpus-per-task")
    cpus = _int(cpus_value) if cpus_value is not None else 1
    gpus, gpu_option = _gpus_per_node(job, nodes, tasks_per_node)

    lines = [_words(c) for c in job.commands]
    # Arguments given after the script on the sbatch line reach it as "$@".
    lines.append(list(job.script_args))
    commands = [w for w in lines if w and w[0] not in {"echo", "printf"}]
    all_words = [word for words in commands for word in words]
    names = {PurePosixPath(w).name for w in all_words}
    uses_torchrun = "torchrun" in names or "torch.distributed.run" in all_words
    nproc = [_int(v) for v in _flag_value(all_words, _NPROC)]
    modules = {all_words[i + 1] for i, w in enumerate(all_words[:-1]) if w == "-m"}
    is_ddp = uses_torchrun or any(n.endswith(".py") and "ddp" in n[:-3] for n in names) \
        or any("ddp" in m for m in modules)
    cpus_per_node = (cpus or 1) * tasks_per_node
    return Resources(
        nodes=nodes,
        nodes_stated=nodes_value is not None,
        ntasks=ntasks,
        ntasks_per_node=ntasks_per_node,
        tasks_per_node=tasks_per_node,
        cpus_per_task=cpus,
        cpus_stated=cpus_value is not None,
        gpus_per_node=gpus,
        gpu_option=gpu_option,
        num_workers=_workers(_flag_value(all_words, _WORKERS)),
        uses_srun="srun" in names,
        uses_torchrun=uses_torchrun,
        nproc_per_node=nproc[0] if nproc and all(n == nproc[0] for n in nproc) else None,
        is_ddp=bool(is_ddp),
        mem_mb_per_node=_memory_per_node(job, cpus_per_node, gpus),
    )


def valid_time(value: str) -> bool:
    """True when Slurm accepts this --time value."""
    return any(form.fullmatch(value.strip()) for form in TIME_FORMS)
