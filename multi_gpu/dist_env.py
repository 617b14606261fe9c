"""Who am I in a distributed run? One place that reads the launcher's environment.

Three launchers are supported, checked in this order:

* **torchrun** (or any launcher that exports ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``, and
  ``MASTER_ADDR``/``MASTER_PORT``): used as they are.
* **plain ``srun``** (one task per GPU): the rank, local rank and world size come from
  ``SLURM_PROCID``/``SLURM_LOCALID``/``SLURM_NTASKS`` through submitit's own Slurm reader,
  ``MASTER_ADDR`` is the first host of the job's node list (what
  ``scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1`` prints) and ``MASTER_PORT`` is
  derived from the job id (plus the array task id) with the same formula as the batch
  templates' ``dlkit_rendezvous``, so every task computes the same values without talking to
  the others.
* **nothing**: one process, rank 0 of 1, no process group needed.

A Slurm *batch* script is not an srun step: it also has ``SLURM_PROCID=0`` and, with ``-n 2``,
``SLURM_NTASKS=2``. Only ``SLURM_STEP_ID`` tells a real step apart, so without it we run alone
instead of waiting forever for a rank 1 that will never start.

Run ``python -m multi_gpu.dist_env`` inside a job to print the ``export`` lines a shell script
can ``eval``, or to see what the tasks of an ``srun`` step will use.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

# Ports 10000-29999: below Linux's ephemeral range (32768+), where outgoing connections live.
# jobs/lib/job.sh (dlkit_rendezvous) uses the very same formula for the batch templates.
_PORT_BASE, _PORT_SPAN = 10000, 20000


@dataclass(frozen=True)
class DistEnv:
    """The facts a process needs to join (or skip) a process group."""

    rank: int
    local_rank: int
    world_size: int
    launcher: str  # "torchrun", "srun" or "none"
    master_addr: str = "127.0.0.1"
    master_port: int = 29500

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def master_port_for_job(job_id: int, array_task_id: int = 0) -> int:
    """A port every task of one job derives alike; other jobs (and array tasks) get other ports.

    ``job_id`` is ``SLURM_ARRAY_JOB_ID`` for an array task (else ``SLURM_JOB_ID``).
    """
    return _PORT_BASE + (job_id + array_task_id) % _PORT_SPAN


def _from_slurm() -> DistEnv:
    """Read the task's place from Slurm's variables, through submitit's Slurm reader."""
    from submitit.slurm.slurm import SlurmJobEnvironment

    slurm = SlurmJobEnvironment()
    env = os.environ
    if "MASTER_PORT" in env:
        port = int(env["MASTER_PORT"])
    else:
        port = master_port_for_job(int(slurm.array_job_id or slurm.raw_job_id),
                                   int(slurm.array_task_id or 0))
    return DistEnv(
        rank=slurm.global_rank,
        local_rank=slurm.local_rank,
        world_size=slurm.num_tasks,
        launcher="srun",
        master_addr=env.get("MASTER_ADDR") or slurm.hostnames[0],
        master_port=port,
    )


def read_env() -> DistEnv:
    """Work out rank, local rank, world size and rendezvous address from the environment."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env:
        return DistEnv(
            rank=int(env["RANK"]),
            local_rank=int(env.get("LOCAL_RANK", env["RANK"])),
            world_size=int(env["WORLD_SIZE"]),
            launcher="torchrun",
            master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
            master_port=int(env.get("MASTER_PORT", "29500")),
        )
    if "SLURM_STEP_ID" in env and "SLURM_PROCID" in env and "SLURM_JOB_ID" in env:
        return _from_slurm()
    return DistEnv(rank=0, local_rank=0, world_size=1, launcher="none")


def export_lines(dist: DistEnv) -> list[str]:
    """Shell ``export`` lines for the variables torch's ``env://`` rendezvous reads."""
    return [
        f"export MASTER_ADDR={dist.master_addr}",
        f"export MASTER_PORT={dist.master_port}",
    ]


def init_process_group(dist: DistEnv, backend: str) -> None:
    """Join the process group over ``env://``.

    A lone process gets a one-member group on an in-memory store, so the DDP code path (and
    its collectives) is the same for 1 and for N processes, with no port to pick.
    """
    import torch.distributed as tdist

    if not dist.distributed:
        tdist.init_process_group(backend=backend, store=tdist.HashStore(), rank=0, world_size=1)
        return
    os.environ.setdefault("MASTER_ADDR", dist.master_addr)
    os.environ.setdefault("MASTER_PORT", str(dist.master_port))
    tdist.init_process_group(
        backend=backend, init_method="env://", rank=dist.rank, world_size=dist.world_size
    )


def local_device(name: str, local_rank: int):
    """This process's device: `cpu`, or the GPU of its local rank (`auto` takes a GPU when there is one).

    Set as the current CUDA device too, so NCCL and every later allocation use it."""
    import torch

    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SystemExit(f"{Path(sys.argv[0]).name}: error: --device {name} but no CUDA GPU is visible")
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device


def destroy_process_group() -> None:
    import torch.distributed as tdist

    if tdist.is_initialized():
        tdist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    """Print ``export`` lines for a batch script (run it inside the job, before ``srun``)."""
    del argv
    if "SLURM_JOB_ID" not in os.environ:
        print("dist_env: not inside a Slurm job (SLURM_JOB_ID is unset)", file=sys.stderr)
        return 2
    print("\n".join(export_lines(_from_slurm())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
