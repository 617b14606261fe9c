"""Stage 0 of the advice: which CPUs and GPUs the profiled job had, and what the node could give.

Never `os.cpu_count()`: on a cluster node it counts every core of the machine, not the few this job may use, and
advice built on it would ask for CPUs the job does not have. The node's cores per GPU (the ceiling for
`--cpus-per-task`) comes from `scontrol show node`: no job variable holds it (`SLURM_CPUS_ON_NODE` is the CPUs
*allocated* to the job on the node, not the node's size).
"""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from profiling.argv import switch
from profiling.cpu_rule import job_cpus
from profiling.precheck import epoch_told, turned_off
from profiling.records import JobFacts


@dataclass(frozen=True)
class Environment:
    """What the machine says, gathered once, so that `job_facts` stays a pure function."""

    env: Mapping[str, str] = field(default_factory=dict)
    affinity: int | None = None    # profiling.cpu_rule.job_cpus()
    node_text: str | None = None   # `scontrol show node NAME` output, when inside Slurm
    nvml_gpus: int | None = None   # GPUs the NVIDIA driver reports, when there is one


def _int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):  # a bool falls through: "True" is no number
        return value if value >= 0 else None
    text = str(value or "").strip().split("(")[0]  # SLURM_JOB_CPUS_PER_NODE may read "4(x2)"
    return int(text) if text.isdigit() else None


def cpus_from_env(env: Mapping[str, str], affinity: int | None) -> tuple[int | None, str]:
    """CPUs this job may use: SLURM_CPUS_PER_TASK when set (sbatch -c), else the affinity mask."""
    if per_task := _int(env.get("SLURM_CPUS_PER_TASK")):
        return per_task, "SLURM_CPUS_PER_TASK"
    return (affinity, "the CPU affinity mask") if affinity else (None, "")


def gpus_from_env(env: Mapping[str, str], driver: int | None = None) -> tuple[int | None, str]:
    """GPUs the job sees: SLURM_GPUS_ON_NODE, else the entries of CUDA_VISIBLE_DEVICES, else the `driver`'s count."""
    if (on_node := _int(env.get("SLURM_GPUS_ON_NODE"))) is not None:
        return on_node, "SLURM_GPUS_ON_NODE"
    if (visible := env.get("CUDA_VISIBLE_DEVICES")) is not None:
        ids = [v for v in visible.split(",") if v.strip() and v.strip() not in {"-1", "NoDevFiles"}]
        return len(ids), "CUDA_VISIBLE_DEVICES"
    return driver, "the NVIDIA driver" if driver is not None else ""


def parse_node(text: str) -> tuple[int | None, int | None]:
    """(CPUTot, number of GPUs in Gres) from `scontrol show node` output."""
    cpus = re.search(r"\bCPUTot=(\d+)", text)
    gres = re.search(r"\bGres=(\S+)", text)
    counts = [int(m.group(1)) for m in re.finditer(r"gpu(?::[^:,(\s]+)?:(\d+)", gres.group(1) if gres else "")]
    return (int(cpus.group(1)) if cpus else None), (sum(counts) if counts else None)


def cores_per_gpu_of(node_text: str | None) -> int | None:
    """The node's fair share of cores for one GPU (CPUTot / GPUs), when the node has GPUs."""
    cpus, gpus = parse_node(node_text or "")
    return cpus // gpus if cpus and gpus else None


def read_environment(meta: Mapping[str, Any] | None = None) -> Environment:
    """Gather the process's environment, affinity mask, Slurm node description and NVML count."""
    env = dict(os.environ)
    node = env.get("SLURMD_NODENAME") or ((meta or {}).get("slurm") or {}).get("SLURM_JOB_NODELIST", "")
    node_text = None
    if node and re.fullmatch(r"[\w.-]+", node):  # this job's node, else the one `run` recorded; not a list
        with suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["scontrol", "show", "node", node], capture_output=True, text=True, timeout=10)
            node_text = out.stdout if out.returncode == 0 else None
    return Environment(env=env, affinity=job_cpus(), node_text=node_text, nvml_gpus=_nvml_gpus())


def _nvml_gpus() -> int | None:
    """GPU count from the driver; None where there is no NVIDIA driver (this is normal on CPU nodes)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no library, no driver, no device: all mean "the driver does not say"
        return None


def job_facts(cpus: int | None = None, gpus: int | None = None, num_workers: int | None = None,
              cores_per_gpu: int | None = None, meta: Mapping[str, Any] | None = None,
              environment: Environment | None = None, loader: Mapping[str, Any] | None = None) -> JobFacts:
    """Merge flags, the script's DataLoader (`profiling.capture`), run metadata and the environment into JobFacts."""
    meta, loader, environment = meta or {}, loader or {}, environment or Environment()
    built_at = loader.get("built_at")
    said: list[str] = []

    def pick(label: str, *candidates: tuple[Any, str]) -> Any:
        for value, source in candidates:
            if (number := _int(value)) is not None:
                said.append(f"{label} from {source}")
                return number
        return None

    cpus = pick("CPUs", (cpus, "--cpus"), (meta.get("cpus"), "the run's metadata"),
                cpus_from_env(environment.env, environment.affinity))  # (value, source), as the others
    gpus = pick("GPUs", (gpus, "--gpus"), (meta.get("gpus"), "the run's metadata"),
                gpus_from_env(environment.env, environment.nvml_gpus))
    num_workers = pick("num_workers", (num_workers, "--num-workers"),
                       (loader.get("num_workers"), f"the script's DataLoader ({built_at})"),
                       (meta.get("num_workers"), "the run's metadata"))
    cores_per_gpu = pick("cores per GPU", (cores_per_gpu, "--cores-per-gpu"),
                         (meta.get("cores_per_gpu"), "the run's metadata"),
                         (cores_per_gpu_of(environment.node_text), "scontrol show node"))
    said += ["CPUs unknown, assumed 1"] if cpus is None else []  # (then 1 CPU and 0 GPUs, below)
    said += ["no GPU found (assumed a CPU-only run; use --gpus N)"] if gpus is None else []
    in_job = bool(environment.env.get("SLURM_JOB_ID") or (meta.get("slurm") or {}).get("SLURM_JOB_ID"))
    requested = bool(said) and (said[0] == "CPUs from --cpus" or in_job)
    argv = [str(a) for a in meta.get("argv", [])]  # the profiled run's own arguments, recorded by `run`
    split = meta.get("io_split") or {}  # the workers' read/decode split (`python -m small_files split`)
    pin_memory, persistent = loader.get("pin_memory"), loader.get("persistent_workers")  # False below: said so (l_2)
    said_off = isinstance(built_at, str) and turned_off(built_at, "persistent_workers", meta.get("cwd") or ".")
    told = epoch_told(built_at, meta.get("cwd") or ".") if isinstance(built_at, str) and not persistent else None
    said_off = said_off or bool(told)  # either way, the edit adds no persistent_workers=True
    return JobFacts(cpus=max(cpus or 1, 1), gpus=gpus or 0, num_workers=num_workers,
                    cores_per_gpu=cores_per_gpu or None, source="; ".join(said), requested=requested,
                    pin_memory=pin_memory if isinstance(pin_memory, bool)
                    else switch(argv, "--pin-memory", "--no-pin-memory"),
                    persistent_workers=False if said_off else persistent or switch(argv, "--persistent-workers"),
                    epoch_told=told,
                    loader_at=built_at if isinstance(built_at, str) else None, loader_built_by=loader.get("built_by"),
                    loader_call=loader.get("call") or "DataLoader", read_share=split.get("read_share"),
                    read_ms=split.get("read_ms_per_batch"), decode_ms=split.get("decode_ms_per_batch"))
