"""The checker's rules: a small table of (id, level, condition, message).

Stage three of the checker: (JobScript, Resources) -> findings. Each condition is a pure
function that returns the numbers for its message, or None when the job is fine. Errors stop a
submission (exit 2); warnings are printed and the job goes ahead. A script can waive a rule it
breaks on purpose with a comment `# dljobs: allow RULE-ID` (lesson 2 does, to profile the
starved baseline).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from profiling.cpu_rule import cpus_for_workers, main_process_cpus
from jobs.resources import Resources, describe, memory_mb, valid_time
from jobs.script import JobScript

Level = Literal["error", "warning"]
Numbers = dict[str, object]
Condition = Callable[[JobScript, Resources], "Numbers | None"]

# Characters that make a name or path unsafe or surprising: `$` and `~` are never expanded in
# #SBATCH lines (they are not shell), the rest break the shell commands people build from names.
METACHARS = set(" \t;&|<>()`$\\'\"*?[]{}!~#")
# "--mem far above the need": the need is estimated per process plus per loader worker, and a
# request above FAR_ABOVE times that is flagged. Sized for the kit's MNIST lessons; see docs/jobs.md.
MB_PER_PROCESS = 4096
MB_PER_WORKER = 1024
FAR_ABOVE = 4


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


def too_few_cpus(job: JobScript, res: Resources) -> Numbers | None:
    """The kit's one CPU rule (profiling.cpu_rule): workers + 2 with a GPU (pinned memory), else + 1."""
    workers = res.num_workers
    gpus = 1 if res.gpus_per_node else 0
    if not isinstance(workers, int) or res.cpus_per_task is None:
        return None
    need = cpus_for_workers(workers, gpus)
    if res.cpus_per_task >= need:
        return None
    stated = (f"--cpus-per-task={res.cpus_per_task}{_where(job, 'cpus-per-task')}" if res.cpus_stated
              else "no --cpus-per-task (Slurm gives 1 CPU)")
    return {"stated": stated, "workers": workers, "need": need, "main": main_process_cpus(gpus),
            "why": "the training loop and its pin-memory thread on a GPU" if gpus else "the main process"}


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
    if res.mem_mb_per_node is None or res.mem_mb_per_node == 0:
        return None
    workers = res.num_workers if isinstance(res.num_workers, int) else max((res.cpus_per_task or 1) - 1, 0)
    need = res.tasks_per_node * (MB_PER_PROCESS + workers * MB_PER_WORKER)
    if res.mem_mb_per_node <= FAR_ABOVE * need:
        return None
    return {"asked": f"{res.mem_mb_per_node / 1024:.0f} GB", "need": f"{need / 1024:.0f} GB",
            "tasks": res.tasks_per_node, "workers": workers}


def array_tasks_share_a_log(job: JobScript, res: Resources) -> Numbers | None:
    if job.get("array") is None:
        return None
    for name in ("output", "error"):
        value = job.get(name)
        if value is not None and "%a" not in value and "%j" not in value:
            return {"option": f"--{name}={value}{_where(job, name)}"}
    return None


RULES: tuple[Rule, ...] = (
    Rule("cpus-for-workers", "error", too_few_cpus,
         "{stated} is smaller than --num-workers {workers} + {main} (a core for each loader worker and "
         "{main} for {why}): ask for --cpus-per-task={need}"),
    Rule("ddp-tasks-per-node", "error", srun_tasks_not_gpus,
         "DDP through srun starts one process per task, but this job runs {tasks} task(s) per node on "
         "{gpus} GPUs per node ({gpu_option}): set --ntasks-per-node={gpus}"),
    Rule("torchrun-per-node", "error", torchrun_not_one_per_node,
         "torchrun starts one process per GPU itself: {problem}"),
    Rule("time-format", "error", bad_time,
         "--time={value}{where} is not a form Slurm accepts: use minutes, MM:SS, HH:MM:SS, "
         "D-HH, D-HH:MM or D-HH:MM:SS (e.g. 01:30:00)"),
    Rule("memory-unit", "error", memory_without_unit, "{option} {problem}"),
    Rule("unsafe-name", "error", unsafe_names,
         "{option} contains {chars}: #SBATCH lines are not run by a shell (no $VAR or ~ expansion) "
         "and such names break the commands built from them; use letters, digits, - _ . / and %j-style patterns"),
    Rule("many-nodes-without-srun", "error", many_nodes_without_srun,
         "--nodes={nodes} but no command is started with srun: the batch script runs on the first node "
         "only, so the other {others} node(s) would sit idle (DDP would hang waiting for them); launch with srun"),
    Rule("ntasks-not-per-node", "warning", ntasks_instead_of_per_node,
         "--ntasks={ntasks} lets Slurm place tasks on any node; for one task per GPU on each node "
         "write --ntasks-per-node={per_node}"),
    Rule("one-gpu-per-node", "warning", one_gpu_per_node,
         "{nodes} nodes with one GPU each: every step crosses the network; ask for the GPUs on fewer "
         "nodes (e.g. --nodes=1 --gres=gpu:{nodes}) unless the site forces this"),
    Rule("array-shared-log", "warning", array_tasks_share_a_log,
         "{option} has neither %a nor %j, so every task of the array writes the same log; "
         "use e.g. %x-%A_%a.out"),
    Rule("mem-far-above-need", "warning", memory_far_above_need,
         "--mem asks for {asked} per node, far above the about {need} that {tasks} process(es) with "
         "{workers} loader worker(s) each need; a smaller request starts sooner (check with seff)"),
)
RULE_IDS: frozenset[str] = frozenset(rule.id for rule in RULES)


def check(job: JobScript, rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """Every finding for one job, errors first, waived rules left out."""
    resources = describe(job)
    findings = []
    for rule in rules:
        if rule.id in job.waived:
            continue
        numbers = rule.condition(job, resources)
        if numbers is not None:
            findings.append(Finding(job.path, rule.id, rule.level, rule.message.format(**numbers)))
    return sorted(findings, key=lambda f: f.level != "error")
