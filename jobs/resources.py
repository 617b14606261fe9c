"""What a parsed job asks for and what it runs, as plain numbers the rules can compare.

Stage two of the checker: JobScript (text) -> Resources (numbers and flags). Values that a
script only knows at run time (`--nproc_per_node=$SLURM_GPUS_ON_NODE`) become None, and the rules
skip them rather than guess; a count the script set in a variable above (`N=2`) is read
(jobs/shell_vars.py). The Python the job starts (and its loader's workers) is `jobs/follow.py`'s.

GPU requests in today's forms all count: `--gres=gpu:N`, `--gres=gpu:TYPE:N`, `--gres=shard:N` (a
share of one GPU), `--gpus=N` / `-G`, `--gpus-per-node`, `--gpus-per-task=TYPE:N`; `--cpus-per-gpu`
gives the CPUs when `--cpus-per-task` is absent, and `--mem-per-gpu` the memory.
"""
from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from jobs.facts import Need, Started
from jobs.script import JobScript
from jobs.shell_vars import known_before, resolve

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
    cpus_option: str                   # how the CPUs were asked for, for messages
    gpus_per_node: int | None
    gpu_option: str | None             # the option that asked for GPUs, for messages
    uses_srun: bool
    uses_torchrun: bool
    nproc_per_node: int | None
    is_ddp: bool
    mem_mb_per_node: float | None      # --mem, or --mem-per-cpu x cpus, or --mem-per-gpu x gpus
    started: tuple[Started, ...] = ()  # the Python launches (jobs/follow.py), filled in by the checker
    measured: Need | None = None       # a measured memory need (jobs/measured.py), when one exists


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _count_after_colon(item: str) -> int:
    """`gpu` -> 1, `gpu:4` -> 4, `gpu:a100:4` -> 4, `a100:2` -> 2 (gres and --gpus* forms)."""
    last = item.split(":")[-1]
    return int(last) if last.isdigit() else 1


def _gpus_per_node(job: JobScript, nodes: int, tasks_per_node: int) -> tuple[int | None, str | None]:
    gres = job.get("gres")
    if gres:
        items = [g.split("(")[0] for g in gres.split(",")]
        gpu_items = [g for g in items if g.split(":")[0] == "gpu"]
        if gpu_items:
            return sum(_count_after_colon(g) for g in gpu_items), f"--gres={gres}"
        if any(g.split(":")[0] == "shard" for g in items):  # shards are slices of one GPU
            return 1, f"--gres={gres}"
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


def _where(job: JobScript, name: str) -> str:
    opt = job.options.get(name)
    return f" ({opt.where})" if opt else ""


def describe(job: JobScript) -> Resources:
    """Reduce a parsed job to the numbers the rules need."""
    nodes_value = job.get("nodes")
    nodes = _int((nodes_value or "1").split("-")[0]) or 1
    ntasks, ntasks_per_node = _int(job.get("ntasks")), _int(job.get("ntasks-per-node"))
    tasks_per_node = ntasks_per_node or (math.ceil(ntasks / nodes) if ntasks else 1)
    cpus_value = job.get("cpus-per-task")
    cpus = _int(cpus_value) if cpus_value is not None else 1
    gpus, gpu_option = _gpus_per_node(job, nodes, tasks_per_node)
    cpus_option = f"--cpus-per-task={cpus_value}{_where(job, 'cpus-per-task')}" if cpus_value is not None \
        else "no --cpus-per-task (Slurm gives 1 CPU)"
    per_gpu = job.get("cpus-per-gpu")
    if cpus_value is None and per_gpu is not None:  # each task gets its GPUs' CPUs
        gpus_per_task = max((gpus or 1) // max(tasks_per_node, 1), 1)
        cpus = _int(per_gpu) * gpus_per_task if _int(per_gpu) is not None else None
        cpus_option = f"--cpus-per-gpu={per_gpu}{_where(job, 'cpus-per-gpu')}"

    lines = [_words(c) for c in job.commands]
    # Arguments given after the script on the sbatch line reach it as "$@".
    lines.append(list(job.script_args))
    commands = [w for w in lines if w and w[0] not in {"echo", "printf"}]
    all_words = [word for words in commands for word in words]
    names = {PurePosixPath(w).name for w in all_words}
    uses_torchrun = "torchrun" in names or "torch.distributed.run" in all_words
    # `--nproc_per_node=$N` counts when the script set N above (jobs/shell_vars.py); "gpu" is no number
    known = known_before(job.commands) + [{}]
    nproc = [_int(resolve(v, known[i])) for i, words in enumerate(lines)
             if words and words[0] not in {"echo", "printf"} for v in _flag_value(words, _NPROC)]
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
        cpus_stated=cpus_value is not None or per_gpu is not None,
        cpus_option=cpus_option,
        gpus_per_node=gpus,
        gpu_option=gpu_option,
        uses_srun="srun" in names,
        uses_torchrun=uses_torchrun,
        nproc_per_node=nproc[0] if nproc and all(n == nproc[0] for n in nproc) else None,
        is_ddp=bool(is_ddp),
        mem_mb_per_node=_memory_per_node(job, cpus_per_node, gpus),
    )


def valid_time(value: str) -> bool:
    """True when Slurm accepts this --time value."""
    return any(form.fullmatch(value.strip()) for form in TIME_FORMS)
