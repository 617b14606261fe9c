"""Preemption-safe training that plugs into lesson 1's loop through its ``step_hook``.

``mnist_classify.train(..., step_hook=hook)`` calls ``hook(batch_idx, loss)`` after every
optimizer step; returning True ends the epoch early. ``CheckpointHook`` uses that single seam to
count steps, save every ``--checkpoint-every`` steps and, after a SIGUSR1/SIGTERM, save once more
and stop. ``resume`` puts a run back exactly where the newest valid checkpoint left it.

Why the resumed run is bit-identical to an uninterrupted one:

* the data order of an epoch depends only on ``seed + epoch`` (ResumableDistributedSampler), and
  the batches already used are skipped by index, never re-drawn;
* every rank's RNG states (torch CPU and CUDA, numpy, python) are saved after the step, and put
  back *after* the DataLoader iterator of the resumed epoch is created, because creating an
  iterator draws a seed from the global torch RNG (``RestoreRngOnIter``);
* model, optimizer and scheduler states are restored before the first resumed step.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import torch

from mnist_classify import non_negative_int
from multi_gpu import checkpoint
from multi_gpu.dist_env import DistEnv
from multi_gpu.preemption import PreemptionGuard, requeue_slurm_job, shield_workers


def add_checkpoint_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    group = parser.add_argument_group("checkpointing and preemption")
    group.add_argument("--checkpoint-dir", type=Path, default=None,
                       help="save checkpoints here and resume from the newest valid one")
    group.add_argument("--checkpoint-every", type=non_negative_int, default=0, metavar="STEPS",
                       help="save every STEPS optimizer steps (0: only on preemption and at the end)")
    group.add_argument("--keep-checkpoints", type=non_negative_int, default=2, metavar="K",
                       help="how many checkpoints to keep (default 2, so a damaged newest has a fallback)")
    group.add_argument("--no-requeue", dest="requeue", action="store_false",
                       help="after a preemption checkpoint, do not call `scontrol requeue`")
    return parser


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain model inside a DDP (or compiled) wrapper, so checkpoints load anywhere."""
    inner = getattr(model, "module", model)
    return getattr(inner, "_orig_mod", inner)


@dataclass
class Progress:
    """Where training stands: ``epoch`` counts from 1, as in lesson 1's loop."""

    epoch: int = 1
    step_in_epoch: int = 0
    global_step: int = 0


def gather_objects(obj: Any, dist_env: DistEnv) -> list[Any]:
    if not dist_env.distributed:
        return [obj]
    import torch.distributed as dist

    gathered: list[Any] = [None] * dist_env.world_size
    dist.all_gather_object(gathered, obj)
    return gathered


def _barrier(dist_env: DistEnv) -> None:
    if dist_env.distributed:
        import torch.distributed as dist

        dist.barrier()


@dataclass
class CheckpointHook:
    """A ``step_hook`` for lesson 1's ``train()``: periodic saves plus save-and-stop on a signal."""

    directory: Path
    every: int
    keep: int
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    dist_env: DistEnv
    device: torch.device
    guard: PreemptionGuard
    progress: Progress = field(default_factory=Progress)
    extra: dict[str, Any] = field(default_factory=dict)
    save_seconds: list[float] = field(default_factory=list)
    preempted: bool = False

    @property
    def step_hook(self) -> CheckpointHook:
        """What lesson 1's ``train(step_hook=...)`` gets: this hook."""
        return self

    def begin_epoch(self, epoch: int, step_in_epoch: int = 0) -> None:
        self.progress.epoch = epoch
        self.progress.step_in_epoch = step_in_epoch

    def __call__(self, batch_idx: int, loss: float) -> bool:
        del batch_idx, loss
        self.progress.step_in_epoch += 1
        self.progress.global_step += 1
        stop = self.guard.stop_requested(self.device, self.dist_env.distributed)
        if stop or (self.every and self.progress.global_step % self.every == 0):
            self.save()
        if stop:
            self.preempted = True
        return stop

    def stop_requested(self) -> bool:
        """For loops outside ``train()`` (between epochs): same agreement as at a step."""
        return self.guard.stop_requested(self.device, self.dist_env.distributed)

    def save(self, finished: bool = False) -> Path | None:
        """Every rank hands over its RNG state; rank 0 writes; all wait until the file is safe."""
        started = time.perf_counter()
        rng_states = gather_objects(checkpoint.capture_rng(self.device), self.dist_env)
        path = None
        if self.dist_env.is_main:
            state = {
                "model": unwrap(self.model).state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
                "rng": rng_states,
                "epoch": self.progress.epoch,
                "step_in_epoch": self.progress.step_in_epoch,
                "global_step": self.progress.global_step,
                "world_size": self.dist_env.world_size,
                "finished": finished,
                **self.extra,
            }
            path = checkpoint.save(state, self.directory, self.progress.global_step)
            checkpoint.remove_stale(self.directory, self.keep)
        _barrier(self.dist_env)
        self.save_seconds.append(time.perf_counter() - started)
        return path


class NoCheckpoints:
    """The hook of a run without ``--checkpoint-dir``: same interface as ``CheckpointHook``, does nothing.

    Its ``step_hook`` is None, so lesson 1's ``train()`` runs exactly as without checkpoints (no
    per-step ``loss.item()`` synchronisation for a hook that would ignore it).
    """

    step_hook = None
    guard: PreemptionGuard | None = None
    preempted = False

    def __init__(self) -> None:
        self.progress = Progress()
        self.save_seconds: list[float] = []

    def begin_epoch(self, epoch: int, step_in_epoch: int = 0) -> None:
        del epoch, step_in_epoch

    def stop_requested(self) -> bool:
        return False

    def save(self, finished: bool = False) -> None:
        del finished


@dataclass
class Resumed:
    """What ``resume`` found: where to continue, and this rank's RNG state to put back."""

    path: Path | None
    progress: Progress
    rng_state: dict[str, Any] | None
    finished: bool = False


class ResumeError(RuntimeError):
    """The checkpoint cannot continue this run (for example another world size)."""


def _choose_path(directory: Path, dist_env: DistEnv) -> Path | None:
    """Rank 0 picks the newest valid checkpoint and tells the others, so all load the same one."""
    chosen = [None]
    if dist_env.is_main:
        checkpoint.remove_stale(directory, keep=10**9)  # only leftovers of killed writes
        found = checkpoint.find_latest_valid(directory)
        chosen = [str(found) if found else None]
    if dist_env.distributed:
        import torch.distributed as dist

        dist.broadcast_object_list(chosen, src=0)
    return Path(chosen[0]) if chosen[0] else None


def resume(directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
           scheduler: Any, dist_env: DistEnv) -> Resumed:
    """Load the newest valid checkpoint into model/optimizer/scheduler, if there is one."""
    path = _choose_path(directory, dist_env)
    if path is None:
        return Resumed(path=None, progress=Progress(), rng_state=None)
    state = checkpoint.load(path)
    if state["world_size"] != dist_env.world_size:
        raise ResumeError(
            f"{path} was written by {state['world_size']} processes but this run has "
            f"{dist_env.world_size}; resume with the same number of processes or use a new "
            "--checkpoint-dir"
        )
    unwrap(model).load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and state["scheduler"] is not None:
        scheduler.load_state_dict(state["scheduler"])
    progress = Progress(state["epoch"], state["step_in_epoch"], state["global_step"])
    return Resumed(path, progress, state["rng"][dist_env.rank], bool(state.get("finished")))


def restore_rng_now(rng_state: dict[str, Any] | None, device: torch.device) -> None:
    """For a resumed epoch with no batches left, where no iterator will be created."""
    if rng_state is not None:
        checkpoint.restore_rng(rng_state, device)


class RestoreRngOnIter:
    """Wraps a DataLoader; the first ``iter()`` restores saved RNG states right after it starts.

    Creating a DataLoader iterator draws its worker base seed from the global torch RNG. The
    uninterrupted run drew that seed at the start of the epoch, long before the step we resume
    after, so the saved RNG state must win over the draw made by the resumed run's iterator.
    """

    def __init__(self, loader: Any, rng_state: dict[str, Any] | None, device: torch.device) -> None:
        self._loader = loader
        self._rng_state = rng_state
        self._device = device

    def __iter__(self) -> Iterator[Any]:
        iterator = iter(self._loader)
        if self._rng_state is not None:
            checkpoint.restore_rng(self._rng_state, self._device)
            self._rng_state = None
        return iterator

    def __len__(self) -> int:
        return len(self._loader)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


@dataclass
class Checkpointing:
    """What ``start_checkpointing`` sets up: the hook, this rank's RNG state to restore, where it resumed from."""

    hook: CheckpointHook | NoCheckpoints
    rng_state: dict[str, Any] | None = None
    resumed_from: str | None = None


def start_checkpointing(args: argparse.Namespace, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                        scheduler: Any, dist_env: DistEnv, device: torch.device,
                        loaders: tuple[Any, ...]) -> Checkpointing:
    """With ``--checkpoint-dir``: catch the preemption signals (workers ignore them), resume from
    the newest valid checkpoint, and hand back the hook; without it, the do-nothing hook.

    Raises ResumeError when the checkpoint cannot continue this run.
    """
    if args.checkpoint_dir is None:
        return Checkpointing(NoCheckpoints())
    guard = PreemptionGuard().install()
    for loader in loaders:
        shield_workers(loader)
    hook = CheckpointHook(args.checkpoint_dir, args.checkpoint_every, args.keep_checkpoints,
                          model, optimizer, scheduler, dist_env, device, guard)
    resumed = resume(args.checkpoint_dir, model, optimizer, scheduler, dist_env)
    hook.progress = resumed.progress
    if resumed.path is None:
        return Checkpointing(hook, resumed.rng_state)
    print(f"resumed from {resumed.path} (epoch {resumed.progress.epoch}, step "
          f"{resumed.progress.step_in_epoch} of the epoch, {resumed.progress.global_step} "
          "in total)", flush=True)
    return Checkpointing(hook, resumed.rng_state, str(resumed.path))


def after_preemption(args: argparse.Namespace, hook: CheckpointHook | NoCheckpoints,
                     dist_env: DistEnv) -> dict[str, Any]:
    """Lesson 07: after a preemption, say so and requeue the Slurm job; the numbers for the metrics."""
    requeued = False
    if hook.preempted and dist_env.is_main:
        print(f"preempted ({hook.guard.signal_name or 'signal on another rank'}): checkpoint "
              f"saved in {args.checkpoint_dir}; run the same command again to resume", flush=True)
        requeued = args.requeue and requeue_slurm_job()
    if hook.preempted:  # every rank exits with the same code
        requeued = gather_objects(requeued, dist_env)[0]
    guard = hook.guard
    return {"preempted": hook.preempted, "requeued": requeued, "checkpoint_seconds": hook.save_seconds,
            "signal": guard.signal_name if guard else None,
            "signal_to_checkpointed_seconds": (time.monotonic() - guard.received_at)
            if guard and guard.received_at else None}
