"""The checker's rules: a small table of (id, level, condition, message).

Stage three of the checker: (JobScript, Resources) -> findings. Each condition is a pure
function that returns the numbers for its message, or None when the job is fine. Errors stop a
submission (exit 2); warnings and notes are printed and the job goes ahead. A script can waive a
rule it breaks on purpose with a comment `# dljobs: allow RULE-ID` (lesson 2 does, to profile the
starved baseline). CPUs for N workers come from the kit's one CPU rule,
`profiling.cpu_rule.main_process_cpus`: workers plus what the main process keeps busy.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from jobs.facts import Need, Started
from jobs.follow import follow, launches_only
from jobs.measured import profile_need, sacct_need
from jobs.resources import Resources, describe, memory_mb, valid_time
from jobs.script import JobScript
from profiling.cpu_rule import main_process_cpus
from jobs.workers_reader import Workers

Level = Literal["error", "warning", "note"]
Numbers = dict[str, object]
Condition = Callable[[JobScript, Resources], "Numbers | None"]

# Characters that make a name or path unsafe or surprising: `$` and `~` are never expanded in
# #SBATCH lines (they are not shell), the rest break the shell commands people build from names.
METACHARS = set(" \t;&|<>()`$\\'\"*?[]{}!~#")
# "--mem far above the need": only a measured need counts (jobs/measured.py), and a request
# above FAR_ABOVE times it is flagged. No rule of thumb: a model's memory is the model's.
FAR_ABOVE = 4
# workers = CPUs (the main process gets no core of its own). Its level follows the H100
# measurement in benchmarks/workers_equal_cpus.py: never clearly slower, so a note (docs/jobs.md).
WORKERS_FILL_CPUS_LEVEL: Level = "note"
# The seed workshop's 1 CPU and 1 worker for each GPU process: lesson 01's measured baseline
# (H100, docs/results.md: 7.99 s an epoch with 1 worker, 3.01 s with 4) makes it a warning.
BASELINE_EPOCH_S, FOUR_WORKERS_EPOCH_S = 7.99, 3.01


@dataclass(frozen=True)
class Rule:
    id: str
    level: Level
    condition: Condition
    message: str  # str.format template over the condition's numbers


@dataclass(frozen=True)
class Finding:
    path: str
    rule: str
    level: Level
    message: str

    def line(self) -> str:
        return f"{self.path}: {self.level}[{self.rule}]: {self.message}"


def _where(job: JobScript, name: str) -> str:
    opt = job.options.get(name)
    return f" ({opt.where})" if opt else ""


def _source(w: Workers) -> str:
    """Where a worker count came from, for messages: `train.py:41`, the job's command line, ..."""
    text = f"{w.how} on the job's command line" if w.where == "the job's command line" else (
        w.where if w.how == "literal" else f"{w.where}, {w.how}")
    return text + (", set only under CUDA" if w.cuda_only else "")


def _loads(job: JobScript, res: Resources) -> list[tuple[Started, int, int, int]]:
    """(launch, workers per process, processes per task, CPUs per task) for every launch whose
    three numbers are known; a CUDA-only setting counts only when the job has a GPU."""
    out = []
    for s in res.started:
        w = s.workers
        if w is None or w.value is None or s.procs_per_task is None or s.cpus_per_task is None:
            continue
        if w.cuda_only and not res.gpus_per_node:
            continue
        out.append((s, w.value, s.procs_per_task, s.cpus_per_task))
    return out


def _cpu_numbers(job: JobScript, res: Resources, s: Started, workers: int, procs: int, cpus: int) -> Numbers:
    main = main_process_cpus(1 if res.gpus_per_node else 0, None)
    total = workers * procs
    where = s.workers.where if s.workers else ""
    stated = res.cpus_option
    if s.launch.srun and dict(s.launch.srun_options).get("cpus-per-task") is not None:
        stated = f"srun -c {cpus}"
    elif not s.launch.srun and res.tasks_per_node > 1:  # the batch step holds every task's CPUs
        stated = f"{res.cpus_option} x {res.tasks_per_node} tasks, run without srun,"
    counted = s.launch.nproc_from
    if counted and res.gpus_per_node:
        counted = counted.replace("the GPUs", f"the {res.gpus_per_node} GPUs")
    return {"stated": stated, "cpus": cpus, "workers": workers, "total": total,
            "many": (f"{procs} processes " + (f"(--nproc-per-node={counted}) " if counted else "")
                     + f"x {workers} = ") if procs > 1 else "",
            "source": (_source(s.workers) if s.workers else where)
            + (f", started by {s.launch.via}" if s.launch.via else ""),
            "need": procs * (workers + main), "main": main,
            "each": f" for each of the {procs} processes" if procs > 1 else ""}


def too_few_cpus(job: JobScript, res: Resources) -> Numbers | None:
    for s, workers, procs, cpus in _loads(job, res):
        if workers * procs > cpus:
            return _cpu_numbers(job, res, s, workers, procs, cpus)
    return None


def _one_cpu_per_gpu_process(res: Resources, workers: int, procs: int, cpus: int) -> bool:
    return bool(res.gpus_per_node) and workers == 1 and cpus == procs


def one_cpu_gpu_process(job: JobScript, res: Resources) -> Numbers | None:
    for s, workers, procs, cpus in _loads(job, res):
        if _one_cpu_per_gpu_process(res, workers, procs, cpus):
            return {**_cpu_numbers(job, res, s, workers, procs, cpus), "slow": BASELINE_EPOCH_S,
                    "fast": FOUR_WORKERS_EPOCH_S,
                    "whom": f"each of its {procs} GPU processes" if procs > 1 else "the GPU process"}
    return None


def workers_fill_cpus(job: JobScript, res: Resources) -> Numbers | None:
    for s, workers, procs, cpus in _loads(job, res):
        if _one_cpu_per_gpu_process(res, workers, procs, cpus):
            continue  # one-cpu-gpu-process says it, as a warning
        if workers >= 1 and workers * procs <= cpus < workers * procs + procs:
            return _cpu_numbers(job, res, s, workers, procs, cpus)
    return None


def workers_from_node_cores(job: JobScript, res: Resources) -> Numbers | None:
    if job.has("exclusive"):
        return None
    for s in res.started:
        if s.workers is not None and s.workers.node_cores and s.cpus_per_task is not None:
            return {"where": s.workers.where, "how": s.workers.how, "cpus": s.cpus_per_task}
    return None


def script_not_read(job: JobScript, res: Resources) -> Numbers | None:
    for s in res.started:
        if s.unread:
            return {"problem": s.unread}
    return None


def srun_tasks_not_gpus(job: JobScript, res: Resources) -> Numbers | None:
    if not res.is_ddp or res.uses_torchrun or not res.gpus_per_node:
        return None
    if res.tasks_per_node == res.gpus_per_node:
        return None
    return {"tasks": res.tasks_per_node, "gpus": res.gpus_per_node, "gpu_option": res.gpu_option}


def torchrun_not_one_per_node(job: JobScript, res: Resources) -> Numbers | None:
    if not res.uses_torchrun or not res.gpus_per_node:
        return None
    if res.tasks_per_node != 1:
        return {"problem": f"{res.tasks_per_node} tasks per node start {res.tasks_per_node} torchruns "
                           "on each node; use --ntasks-per-node=1"}
    if res.nproc_per_node is not None and res.nproc_per_node != res.gpus_per_node:
        return {"problem": f"--nproc_per_node={res.nproc_per_node} but the job has {res.gpus_per_node} "
                           f"GPUs per node ({res.gpu_option})"}
    return None


def bad_time(job: JobScript, res: Resources) -> Numbers | None:
    value = job.get("time")
    if value is None or valid_time(value):
        return None
    return {"value": value, "where": _where(job, "time")}


def memory_without_unit(job: JobScript, res: Resources) -> Numbers | None:
    for name in ("mem", "mem-per-cpu", "mem-per-gpu"):
        value = job.get(name)
        if value is None:
            continue
        value = value.strip()
        if value.isdigit() and value != "0":
            return {"option": f"--{name}={value}{_where(job, name)}",
                    "problem": f"has no unit, so Slurm reads {value} megabytes; write {value}M, or e.g. 16G"}
        if memory_mb(value) is None:
            return {"option": f"--{name}={value}{_where(job, name)}",
                    "problem": "is not a size Slurm reads; use a number with K, M, G or T, e.g. 16G"}
    return None


def unsafe_names(job: JobScript, res: Resources) -> Numbers | None:
    for name in ("job-name", "output", "error"):
        value = job.get(name)
        if value is None:
            continue
        bad = sorted(set(value) & METACHARS)
        if bad:
            shown = " ".join(repr(c) for c in bad)
            return {"option": f"--{name}={value}{_where(job, name)}", "chars": shown}
    return None


def many_nodes_without_srun(job: JobScript, res: Resources) -> Numbers | None:
    if res.nodes > 1 and not res.uses_srun:
        return {"nodes": res.nodes, "others": res.nodes - 1}
    return None


def ntasks_instead_of_per_node(job: JobScript, res: Resources) -> Numbers | None:
    if res.ntasks is None or res.ntasks < 2 or res.ntasks_per_node is not None:
        return None
    if res.nodes > 1 or res.is_ddp or (res.gpus_per_node or 0) > 1:
        per_node = res.gpus_per_node or res.tasks_per_node
        return {"ntasks": res.ntasks, "per_node": per_node}
    return None


def one_gpu_per_node(job: JobScript, res: Resources) -> Numbers | None:
    if res.nodes > 1 and res.gpus_per_node == 1:
        return {"nodes": res.nodes}
    return None


def memory_far_above_need(job: JobScript, res: Resources) -> Numbers | None:
    need = res.measured
    if need is None or not res.mem_mb_per_node:
        return None
    counts = [(s.per_node if need.per == "process" else s.tasks_per_node) for s in res.started]
    if need.per == "task" and not counts:  # sacct measured the job's own steps, whatever they run
        counts = [res.tasks_per_node]
    if not counts or any(c is None for c in counts):
        return None
    units = max(c for c in counts if c is not None)
    per_node = need.mb * units
    if res.mem_mb_per_node <= FAR_ABOVE * per_node:
        return None
    return {"asked": f"{res.mem_mb_per_node / 1024:.0f} GB", "need": f"{per_node / 1024:.1f} GB",
            "units": units, "per": "process(es)" if need.per == "process" else "task(s)", "source": need.source}


def array_tasks_share_a_log(job: JobScript, res: Resources) -> Numbers | None:
    if job.get("array") is None:
        return None
    for name in ("output", "error"):
        value = job.get(name)
        if value is not None and "%a" not in value and "%j" not in value:
            return {"option": f"--{name}={value}{_where(job, name)}"}
    return None


def shards_with_gpus(job: JobScript, res: Resources) -> Numbers | None:
    """`--gres=shard:N` beside whole GPUs: Slurm 22.05 refuses the job at submission."""
    gres = job.get("gres") or ""
    items = [g.split("(")[0].split(":") for g in gres.split(",") if g]
    shards = [":".join(i) for i in items if i[0] == "shard"]
    if not shards:
        return None
    whole = [f"--gres={':'.join(i)}" for i in items if i[0] == "gpu"]
    whole += [f"--{name}={job.get(name)}" for name in ("gpus", "gpus-per-node", "gpus-per-task")
              if job.get(name)]
    if not whole:
        return None
    return {"shards": f"--gres={','.join(shards)}", "gpus": " and ".join(whole), "where": _where(job, "gres")}


RULES: tuple[Rule, ...] = (
    Rule("cpus-for-workers", "note", too_few_cpus,
         "{stated} gives {cpus} CPU(s) to {many}{total} loader worker(s) (num_workers={workers}: {source}), so "
         "the workers outnumber the CPUs: ask for --cpus-per-task={need} ({workers} workers + {main} for the "
         "main process{each})"),
    Rule("ddp-tasks-per-node", "error", srun_tasks_not_gpus,
         "DDP through srun starts one process per task, but this job runs {tasks} task(s) per node on "
         "{gpus} GPUs per node ({gpu_option}): set --ntasks-per-node={gpus}"),
    Rule("torchrun-per-node", "error", torchrun_not_one_per_node,
         "torchrun starts one process per GPU itself: {problem}"),
    Rule("time-format", "error", bad_time,
         "--time={value}{where} is not a form Slurm accepts: use minutes, MM:SS, HH:MM:SS, "
         "D-HH, D-HH:MM or D-HH:MM:SS (e.g. 01:30:00)"),
    Rule("memory-unit", "error", memory_without_unit, "{option} {problem}"),
    Rule("shard-with-gpu", "error", shards_with_gpus,
         "{shards}{where} asks for shares of a GPU beside whole GPUs ({gpus}), which Slurm refuses at "
         "submission (Invalid generic resource specification): ask for either --gres=shard:N (a share "
         "of one GPU) or whole GPUs, not both"),
    Rule("unsafe-name", "error", unsafe_names,
         "{option} contains {chars}: #SBATCH lines are not run by a shell (no $VAR or ~ expansion) "
         "and such names break the commands built from them; use letters, digits, - _ . / and %j-style patterns"),
    Rule("many-nodes-without-srun", "error", many_nodes_without_srun,
         "--nodes={nodes} but no command is started with srun: the batch script runs on the first node "
         "only, so the other {others} node(s) would sit idle (DDP would hang waiting for them); launch with srun"),
    Rule("ntasks-not-per-node", "warning", ntasks_instead_of_per_node,
         "--ntasks={ntasks} lets Slurm place tasks on any node; for one task per GPU on each node "
         "write --ntasks-per-node={per_node}"),
    Rule("one-gpu-per-node", "note", one_gpu_per_node,
         "{nodes} nodes with one GPU each: every step crosses the network; ask for the GPUs on fewer "
         "nodes (e.g. --nodes=1 --gres=gpu:{nodes}) unless the site forces this"),
    Rule("array-shared-log", "warning", array_tasks_share_a_log,
         "{option} has neither %a nor %j, so every task of the array writes the same log; "
         "use e.g. %x-%A_%a.out"),
    Rule("mem-far-above-need", "note", memory_far_above_need,
         "--mem asks for {asked} per node, far above the {need} measured for {units} {per} on a node "
         "({source}); a smaller request starts sooner"),
    Rule("workers-from-node-cores", "note", workers_from_node_cores,
         "num_workers follows {how} ({where}), which counts every core of the node, not the job's {cpus} "
         "CPU(s): use len(os.sched_getaffinity(0)) minus the main process's CPUs"),
    Rule("one-cpu-gpu-process", "warning", one_cpu_gpu_process,
         "{stated} gives {whom} one CPU, which it shares with its loader worker (num_workers={workers}: "
         "{source}): lesson 01's baseline, this setup, took {slow} s an epoch against {fast} s with 4 workers "
         "(H100, docs/results.md); ask for CPUs for more workers (lesson 02's profile says how many), at "
         "least --cpus-per-task={need} ({workers} worker + {main} for the main process{each})"),
    Rule("workers-fill-cpus", WORKERS_FILL_CPUS_LEVEL, workers_fill_cpus,
         "{stated} gives {cpus} CPU(s) to {many}{total} loader worker(s) (num_workers={workers}: {source}), "
         "leaving the main process no core of its own; the kit's rule is --cpus-per-task={need} "
         "({workers} worker(s) + {main} for the main process{each})"),
    Rule("script-not-read", "note", script_not_read, "{problem}; nothing is said about its workers"),
)
RULE_IDS: frozenset[str] = frozenset(rule.id for rule in RULES)


def check(job: JobScript, root: Path | None = None, sacct: bool = False,
          rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """Every finding for one job, errors first, waived rules left out.

    root: the folder the job is submitted from; when given, the Python scripts the job starts are
    read from there (else only the job's own text is used). sacct: also ask sacct for an earlier
    run's memory (bounded by a timeout).
    """
    resources = describe(job)
    if root is None:
        resources = dataclasses.replace(resources, started=launches_only(job, resources))
    else:
        started = follow(job, resources, root)
        resources = dataclasses.replace(resources, started=started,
                                        measured=_measured(job, started, root, sacct))
    findings = []
    for rule in rules:
        if rule.id in job.waived:
            continue
        numbers = rule.condition(job, resources)
        if numbers is not None:
            findings.append(Finding(job.path, rule.id, rule.level, rule.message.format(**numbers)))
    order = {"error": 0, "warning": 1, "note": 2}
    return sorted(findings, key=lambda f: order[f.level])


def _measured(job: JobScript, started: tuple[Started, ...], root: Path, sacct: bool) -> Need | None:
    """The job's measured memory need: a kit profile of its script first, then (if asked) sacct."""
    folders = [root / "runs"] + ([Path(os.environ["DLKIT_RUNS_DIR"])] if os.environ.get("DLKIT_RUNS_DIR") else [])
    for s in started:
        if s.path is not None:
            need = profile_need(s.path, folders, root)
            if need is not None:
                return need
    name = job.get("job-name")
    return sacct_need(name) if sacct and name else None
