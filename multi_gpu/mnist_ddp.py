"""Lesson 05: lesson 1's MNIST on several GPUs with DistributedDataParallel; lesson 07 makes it safe to preempt.

The model, data, train() and test() are lesson 1's (mnist_classify.py). What changes:

1. each process finds its rank from the launcher (torchrun, plain srun, or none) and joins a
   process group: NCCL on GPUs, gloo on CPUs;
2. ``--batch-size`` is the GLOBAL batch: each of the N processes trains on batch/N images a step;
3. a DistributedSampler gives every process its own share of each epoch (``set_epoch`` reshuffles);
4. the model is wrapped in DDP, which averages the gradients across processes in backward();
5. rank 0 alone evaluates, prints and writes the metrics, after summing the ranks' numbers;
6. with ``--checkpoint-dir`` it checkpoints, resumes, and stops cleanly on SIGUSR1/SIGTERM (lesson 07:
   ``multi_gpu.resumable.start_checkpointing`` and ``after_preemption``; without it they do nothing).

    python multi_gpu/mnist_ddp.py --synthetic --epochs 1                   # one process
    torchrun --standalone --nproc_per_node=2 multi_gpu/mnist_ddp.py --synthetic
    srun --ntasks-per-node=2 python multi_gpu/mnist_ddp.py --synthetic      # inside a job
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.lr_scheduler import StepLR

import mnist_classify as lesson1
from digits import tensorboard_log
from multi_gpu import dist_env
from multi_gpu.resumable import (CheckpointHook, NoCheckpoints, RestoreRngOnIter, ResumeError, add_checkpoint_args,
                                 after_preemption, gather_objects, restore_rng_now, start_checkpointing, unwrap)
from multi_gpu.sampler import ResumableDistributedSampler

EXIT_PREEMPTED = 75  # EX_TEMPFAIL: "try again"; a wrapper loop reruns the command to resume


def build_parser():
    parser = lesson1.build_parser()
    parser.description = ("Lesson 1's MNIST with DistributedDataParallel. --batch-size is the "
                          "global batch, split evenly over the processes.")
    return add_checkpoint_args(parser)


def check_args(parser, args, world_size: int) -> None:
    """Refuse what cannot work, with one line and exit 2, before any process group exists."""
    if args.no_cuda:
        args.device = "cpu"
    if args.batch_size % world_size:
        lower = args.batch_size - args.batch_size % world_size
        parser.error(f"--batch-size {args.batch_size} is the global batch and must divide evenly "
                     f"over {world_size} processes (try {lower or world_size} or "
                     f"{lower + world_size})")
    if args.gpu_resident:
        parser.error("--gpu-resident is lesson 1's single-GPU path; the DDP script needs the "
                     "DataLoader with a DistributedSampler")
    changed = [flag for flag, value, default in (
        ("--optimizer", args.optimizer, "adadelta"), ("--schedule", args.schedule, "step"),
        ("--lr-scaling", args.lr_scaling, "none"), ("--cuda-graph", args.cuda_graph, False)) if value != default]
    if changed:
        parser.error(f"{', '.join(changed)}: lesson 04's single-GPU speed options; the DDP script trains with "
                     "pytorch/examples' Adadelta and StepLR")


def params_digest(model: torch.nn.Module) -> str:
    """A fingerprint of the weights: DDP keeps it equal on every rank."""
    digest = hashlib.sha256()
    for name, tensor in unwrap(model).state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Training:
    """What the epoch loop works on, built once by ``run_training``."""

    args: argparse.Namespace        # as parsed: the global batch
    local_args: argparse.Namespace  # what lesson 1's loaders and train() see: the per-process batch
    dist: dist_env.DistEnv
    device: torch.device
    model: torch.nn.Module          # the DDP (maybe compiled) wrapper that trains
    net: torch.nn.Module            # the plain network inside, which rank 0 evaluates
    optimizer: torch.optim.Optimizer
    scheduler: StepLR
    sampler: ResumableDistributedSampler
    train_loader: Any
    test_loader: Any
    board: tensorboard_log.EpochWriter | None = None  # rank 0's TensorBoard writer: one point per epoch


def run_epochs(run: Training, hook: CheckpointHook | NoCheckpoints, rng_state: dict | None) -> dict:
    """Lesson 1's epoch loop, made resumable: returns the numbers of all ranks, summed by rank 0.

    A resumed run starts inside an epoch: the sampler skips the batches already trained, and
    the saved RNG state is put back right after the loader's iterator is created. Without
    --checkpoint-dir the hook is a `NoCheckpoints`, and each of its steps does nothing.
    """
    args, dist, device = run.args, run.dist, run.device
    totals = {"steps": 0, "images": 0, "seconds": 0.0, "data_wait_seconds": 0.0}
    epoch_seconds, test_loss, accuracy, finished_loop = [], float("nan"), float("nan"), True
    first_epoch = hook.progress.epoch
    for epoch in range(first_epoch, args.epochs + 1):
        run.sampler.set_epoch(epoch)
        start_step = hook.progress.step_in_epoch if epoch == first_epoch else 0
        run.sampler.skip(start_step * run.local_args.batch_size)
        hook.begin_epoch(epoch, start_step)
        stats = {"steps": 0, "images": 0, "seconds": 0.0, "data_wait_seconds": 0.0, "stopped": False}
        if len(run.sampler) == 0:  # resumed after the epoch's last step: nothing left to train
            restore_rng_now(rng_state, device)
        else:
            left = None if args.max_steps is None else args.max_steps - totals["steps"]
            stats = lesson1.train(run.local_args, run.model, device,
                                  RestoreRngOnIter(run.train_loader, rng_state, device), run.optimizer, epoch,
                                  step_hook=hook.step_hook, max_steps=left)
        rng_state = None
        ranks = gather_objects(stats, dist)
        epoch_seconds.append(max(s["seconds"] for s in ranks))
        totals["seconds"] += epoch_seconds[-1]
        totals["steps"] += stats["steps"]
        totals["images"] += sum(s["images"] for s in ranks)
        totals["data_wait_seconds"] += sum(s["data_wait_seconds"] for s in ranks) / dist.world_size
        if hook.preempted:
            finished_loop = False
            break
        if stats["stopped"]:  # --max-steps ended the run inside this epoch
            finished_loop = False
            hook.save()
        if dist.is_main:
            test_loss, accuracy = lesson1.test(run.net, device, run.test_loader, amp=args.amp,
                                               channels_last=args.channels_last)
            if run.board is not None:
                run.board.epoch(epoch, {**stats, "images": sum(s["images"] for s in ranks),
                                        "seconds": epoch_seconds[-1],
                                        "data_wait_seconds": sum(s["data_wait_seconds"] for s in ranks)
                                        / dist.world_size}, test_loss, accuracy)
        if stats["stopped"]:
            break
        run.scheduler.step()
        if hook.stop_requested():  # a signal that came during test()
            hook.begin_epoch(epoch + 1, 0)
            hook.save()
            hook.preempted, finished_loop = True, False
            break
    if finished_loop and first_epoch <= args.epochs:  # the last checkpoint says "finished"
        hook.begin_epoch(args.epochs + 1, 0)
        hook.save(finished=True)

    seconds = totals["seconds"] or float("nan")
    return {"images_per_sec": totals["images"] / seconds,
            "images_per_sec_per_process": totals["images"] / seconds / dist.world_size,
            "epoch_seconds": epoch_seconds, "data_wait_seconds": totals["data_wait_seconds"],
            "test_loss": test_loss, "test_accuracy": accuracy, "steps": totals["steps"],
            "train_images": totals["images"], "finished": finished_loop}


def main(argv: list[str] | None = None) -> int:
    dist = dist_env.read_env()
    if dist.is_main:
        return run_training(argv, dist)
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        return run_training(argv, dist)  # one copy of the training log is enough; ranks speak on stderr


def run_training(argv: list[str] | None, dist: dist_env.DistEnv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args, dist.world_size)
    try:
        device = lesson1.resolve_device(args.device)
        if device.type == "cuda":
            device = torch.device("cuda", dist.local_rank % torch.cuda.device_count())
            torch.cuda.set_device(device)
        lesson1.print_context(lesson1.run_context(args, device))
        board = None
        if args.tensorboard is not None:  # every rank checks, so all stop alike; rank 0 writes
            tensorboard_log.check_dir(args.tensorboard)
            board = tensorboard_log.EpochWriter(args.tensorboard) if dist.is_main else None
        torch.manual_seed(args.seed)
        train_ds, test_ds = lesson1.load_datasets(args)
    except (lesson1.SetupError, tensorboard_log.TensorBoardDirError) as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2
    dist_env.init_process_group(dist, "nccl" if device.type == "cuda" else "gloo")
    # The host too: on several nodes it shows which node each rank landed on.
    print(f"[rank {dist.rank}/{dist.world_size}] launcher={dist.launcher} pid={os.getpid()} "
          f"device={device} host={socket.gethostname()}", file=sys.stderr, flush=True)

    local_args = copy.copy(args)  # lesson 1's loaders and train() see the per-process batch
    local_args.batch_size = args.batch_size // dist.world_size
    sampler = ResumableDistributedSampler(train_ds, num_replicas=dist.world_size, rank=dist.rank,
                                          shuffle=True, seed=args.seed)
    train_loader, test_loader = lesson1.make_loaders(local_args, train_ds, test_ds, device,
                                                     train_sampler=sampler)

    net = lesson1.Net().to(device)
    if args.channels_last:
        net = net.to(memory_format=torch.channels_last)
    model = DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
    if args.compile:
        model = torch.compile(model)
    optimizer = optim.Adadelta(net.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    torch.manual_seed(args.seed + dist.rank)  # same weights everywhere, own dropout per rank

    try:
        checkpoints = start_checkpointing(args, model, optimizer, scheduler, dist, device, (train_loader, test_loader))
    except ResumeError as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2
    print(f"training started: {dist.world_size} process(es), global batch {args.batch_size}, "
          f"{local_args.batch_size} per process", flush=True)

    summary = run_epochs(Training(args, local_args, dist, device, model, net, optimizer, scheduler, sampler,
                                  train_loader, test_loader, board), checkpoints.hook, checkpoints.rng_state)
    if board is not None:
        board.close()
    print(f"[rank {dist.rank}/{dist.world_size}] parameters sha256={params_digest(model)}",
          file=sys.stderr, flush=True)
    preemption = after_preemption(args, checkpoints.hook, dist)
    if dist.is_main and args.metrics_json is not None:
        lesson1.write_json(args.metrics_json, {
            **summary, "world_size": dist.world_size, "launcher": dist.launcher,
            "global_batch_size": args.batch_size, "local_batch_size": local_args.batch_size,
            "resumed_from": checkpoints.resumed_from, **preemption,
            "settings": {**lesson1.settings(local_args, device, lesson1.run_context(args, device),
                                            train_ds, test_ds),
                         "batch_size": args.batch_size, "world_size": dist.world_size,
                         "backend": "nccl" if device.type == "cuda" else "gloo"}})
    dist_env.destroy_process_group()
    if preemption["preempted"] and not preemption["requeued"]:
        return EXIT_PREEMPTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
