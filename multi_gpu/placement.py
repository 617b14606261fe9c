"""Which GPU holds which stage of which pipeline: the placement file, checked before launch.

A placement file (YAML) lists the pipelines; each pipeline lists its stages in order, and each
stage names the host (the n-th node of the job, counted from 0) and the GPU on that host::

    # 2 pipelines x 2 stages on one node with 4 GPUs
    pipelines:
      - [{host: 0, gpu: 0}, {host: 0, gpu: 1}]   # pipeline 0: stage 0 on GPU 0, stage 1 on GPU 1
      - [{host: 0, gpu: 2}, {host: 0, gpu: 3}]

The job runs one task per GPU and numbers them host by host (``srun``'s block distribution,
torchrun's node rank x processes per node), so the task on host ``h``, GPU ``g`` is rank
``h * gpus_per_host + g``. The file is checked against the job before any process group is set
up: every pipeline has the same number of stages, no GPU is used twice, and every task of the
job gets exactly one stage. A wrong file gets one line and exit 2.

Without a file the placement is derived from the allocation: stages on consecutive GPUs of a
node, so a pipeline's activations stay inside one node when the stages fit, and the pipelines
fill the nodes in order.

    python -m multi_gpu.placement jobs/placements/2x2-one-node.yaml --hosts 1 --gpus-per-host 4
    python -m multi_gpu.placement --stages 2 --hosts 1 --gpus-per-host 4      # the default
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path


class PlacementError(ValueError):
    """A placement that cannot run on this job; the message is the one line a user sees."""


@dataclass(frozen=True)
class Placement:
    """grid[pipeline][stage] = (host, gpu); the job has ``hosts`` x ``gpus_per_host`` tasks."""

    grid: tuple[tuple[tuple[int, int], ...], ...]
    hosts: int
    gpus_per_host: int

    @property
    def pipelines(self) -> int:
        return len(self.grid)

    @property
    def stages(self) -> int:
        return len(self.grid[0])

    def rank_of(self, host: int, gpu: int) -> int:
        return host * self.gpus_per_host + gpu

    def rank_grid(self) -> list[list[int]]:
        """Ranks as [pipeline][stage]: the 2-D ("dp", "pp") device mesh."""
        return [[self.rank_of(h, g) for h, g in pipe] for pipe in self.grid]

    def role(self, rank: int) -> tuple[int, int]:
        """(pipeline, stage) of a rank."""
        for p, row in enumerate(self.rank_grid()):
            if rank in row:
                return p, row.index(rank)
        raise PlacementError(f"rank {rank} has no stage")  # check() makes this unreachable

    def table(self) -> str:
        lines = [f"placement: {self.pipelines} pipeline(s) x {self.stages} stage(s) on "
                 f"{self.hosts} host(s) x {self.gpus_per_host} GPU(s)"]
        for p, pipe in enumerate(self.grid):
            where = "  ".join(f"s{s}=host{h}:gpu{g}" for s, (h, g) in enumerate(pipe))
            lines.append(f"  pipeline {p}: {where}")
        return "\n".join(lines)


def _slot(entry: object, where: str) -> tuple[int, int]:
    if not isinstance(entry, dict) or set(entry) != {"host", "gpu"}:
        raise PlacementError(f"{where} must be a mapping {{host: H, gpu: G}}, got {entry!r}")
    host, gpu = entry["host"], entry["gpu"]
    for name, value in (("host", host), ("gpu", gpu)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise PlacementError(f"{where}: {name} must be a whole number >= 0, got {value!r}")
    return host, gpu


def parse(data: object, hosts: int, gpus_per_host: int) -> Placement:
    """Check a loaded placement document against a job of ``hosts`` x ``gpus_per_host`` tasks."""
    if not isinstance(data, dict) or not isinstance(data.get("pipelines"), list) or not data["pipelines"]:
        raise PlacementError("the file must hold a key 'pipelines' with a non-empty list of pipelines")
    extra = sorted(set(data) - {"pipelines"})
    if extra:
        raise PlacementError(f"unknown key(s) {', '.join(map(str, extra))}: only 'pipelines' is read")
    grid, seen = [], {}
    for p, pipe in enumerate(data["pipelines"]):
        if not isinstance(pipe, list) or not pipe:
            raise PlacementError(f"pipeline {p} must be a non-empty list of stages, got {pipe!r}")
        row = []
        for s, entry in enumerate(pipe):
            host, gpu = _slot(entry, f"pipeline {p} stage {s}")
            if host >= hosts:
                raise PlacementError(f"pipeline {p} stage {s} is on host {host}, but the job has "
                                     f"{hosts} host(s) (0..{hosts - 1})")
            if gpu >= gpus_per_host:
                raise PlacementError(f"pipeline {p} stage {s} is on GPU {gpu}, but the job runs "
                                     f"{gpus_per_host} task(s) per host (GPUs 0..{gpus_per_host - 1})")
            if (host, gpu) in seen:
                raise PlacementError(f"host {host} GPU {gpu} is used twice: by {seen[host, gpu]} "
                                     f"and by pipeline {p} stage {s}")
            seen[host, gpu] = f"pipeline {p} stage {s}"
            row.append((host, gpu))
        grid.append(tuple(row))
    if len({len(row) for row in grid}) > 1:
        counts = ", ".join(f"pipeline {p}: {len(row)}" for p, row in enumerate(grid))
        raise PlacementError(f"every pipeline needs the same number of stages ({counts})")
    tasks = hosts * gpus_per_host
    if len(seen) != tasks:
        idle = sorted({(h, g) for h in range(hosts) for g in range(gpus_per_host)} - set(seen))
        shown = ", ".join(f"host {h} GPU {g}" for h, g in idle[:4]) + (" ..." if len(idle) > 4 else "")
        raise PlacementError(f"the file places {len(seen)} stage(s) but the job has {tasks} task(s); "
                             f"without a stage: {shown}")
    return Placement(tuple(grid), hosts, gpus_per_host)


def load(path: Path, hosts: int, gpus_per_host: int) -> Placement:
    """Read and check a placement file."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise PlacementError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise PlacementError(f"{path} is not valid YAML{at}: {getattr(exc, 'problem', exc)}") from None
    try:
        return parse(data, hosts, gpus_per_host)
    except PlacementError as exc:
        raise PlacementError(f"{path}: {exc}") from None


def default(stages: int, hosts: int, gpus_per_host: int) -> Placement:
    """Stages on consecutive GPUs, pipelines filling the nodes in order (rank = p * stages + s)."""
    tasks = hosts * gpus_per_host
    if stages < 1 or tasks % stages:
        raise PlacementError(f"{stages} stage(s) do not divide the job's {tasks} task(s) "
                             f"({hosts} host(s) x {gpus_per_host}) into whole pipelines")
    grid = tuple(tuple(divmod(p * stages + s, gpus_per_host) for s in range(stages))
                 for p in range(tasks // stages))
    return Placement(grid, hosts, gpus_per_host)


def job_shape(world_size: int, env: dict[str, str] | None = None) -> tuple[int, int]:
    """(hosts, tasks per host) of this job: from Slurm's variables, else torchrun's, else one host."""
    env = dict(os.environ) if env is None else env
    hosts = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or 0)
    if not hosts and env.get("LOCAL_WORLD_SIZE"):
        hosts = world_size // int(env["LOCAL_WORLD_SIZE"])
    hosts = max(hosts, 1)
    if world_size % hosts:
        raise PlacementError(f"{world_size} task(s) do not spread evenly over {hosts} host(s); "
                             "run the same number of tasks on every node")
    return hosts, world_size // hosts


def resolve(path: Path | None, stages: int | None, world_size: int,
            env: dict[str, str] | None = None) -> Placement:
    """The placement a run uses: the file when given, else the default for ``stages``."""
    hosts, per_host = job_shape(world_size, env)
    if path is None:
        return default(stages or 1, hosts, per_host)
    placed = load(path, hosts, per_host)
    if stages is not None and stages != placed.stages:
        raise PlacementError(f"{path}: the file has {placed.stages} stage(s) per pipeline but "
                             f"--stages {stages} was given")
    return placed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multi_gpu.placement",
                                     description="Check a placement file against a job, or print the default.")
    parser.add_argument("file", nargs="?", type=Path, help="placement YAML (default: derived from the job)")
    parser.add_argument("--stages", type=int, default=None, help="stages per pipeline (default placement)")
    parser.add_argument("--hosts", type=int, default=None, help="nodes (default: $SLURM_JOB_NUM_NODES)")
    parser.add_argument("--gpus-per-host", type=int, default=None,
                        help="tasks per node (default: $SLURM_NTASKS / nodes)")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    if args.hosts is not None:
        env["SLURM_JOB_NUM_NODES"] = str(args.hosts)
    hosts = int(env.get("SLURM_JOB_NUM_NODES") or 1)
    per_host = args.gpus_per_host
    if per_host is None:
        per_host = int(env.get("SLURM_NTASKS") or hosts) // max(hosts, 1)
    try:
        if hosts < 1 or per_host < 1:
            raise PlacementError(f"a job needs at least 1 host and 1 task per host, got {hosts} x {per_host}")
        placed = resolve(args.file, args.stages, hosts * per_host, env)
    except PlacementError as exc:
        print(f"placement: error: {exc}", file=sys.stderr)
        return 2
    print(placed.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
