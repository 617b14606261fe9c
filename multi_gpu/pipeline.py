"""Pipeline plus data parallel: P pipelines x S stages on P*S processes, one per GPU.

Each pipeline holds the whole model cut into S stages (``multi_gpu/pipeline_models.py`` says
how); its share of the global batch is cut into microbatches that flow through the stages under
a GPipe or 1F1B schedule (``torch.distributed.pipelining``). The P pipelines are data parallel:
after each step the gradients of every stage are averaged over the P copies of that stage. The
processes form a 2-D device mesh, ("dp", "pp"), laid out by a placement file
(``multi_gpu/placement.py``) or by the default placement derived from the job.

With one stage there is nothing to pipeline: the script trains the whole model under DDP on the
full local batch, which is both the data-parallel baseline and the one-process reference.

    python -m multi_gpu.pipeline --model mlp --width 16 --depth 4 --classes 4 --global-batch 32
    torchrun --standalone --nproc-per-node=2 -m multi_gpu.pipeline --model mlp --width 16 \\
        --depth 4 --classes 4 --global-batch 32 --schedule 1f1b      # 1 pipeline x 2 stages
    srun -n 4 python -m multi_gpu.pipeline --stages 2 ...             # 2 pipelines x 2 stages
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as tdist
import torch.nn.functional as F
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
from torch.nn.parallel import DistributedDataParallel as DDP

from multi_gpu import dist_env, placement
from multi_gpu.pipeline_models import MODELS, ModelSpec, Stage, block_costs, build_blocks, split
from mnist_classify import positive_int, write_json
from multi_gpu.resumable import gather_objects

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}
Step = Callable[[], "torch.Tensor | None"]  # one training step; returns this process's loss, if it has one


def build_parser() -> argparse.ArgumentParser:
    # Option names must not be prefixes of torchrun's own options (torchrun abbreviates).
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument("--width", type=positive_int, default=1024, help="mlp: features per layer")
    p.add_argument("--depth", type=positive_int, default=8, help="mlp: residual blocks")
    p.add_argument("--classes", type=positive_int, default=1000)
    p.add_argument("--image-size", type=positive_int, default=224, metavar="PX", help="resnet input")
    p.add_argument("--placement", type=Path, default=None,
                   help="placement YAML (pipelines x stages -> host, GPU); checked before launch")
    p.add_argument("--stages", type=positive_int, default=None,
                   help="stages per pipeline when there is no placement file (default: all "
                        "processes form one pipeline)")
    p.add_argument("--schedule", choices=sorted(SCHEDULES), default="1f1b")
    p.add_argument("--microbatches", type=positive_int, default=4, help="per pipeline per step")
    p.add_argument("--global-batch", type=positive_int, default=256,
                   help="samples per step over all pipelines")
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--steps", type=positive_int, default=5, help="timed steps")
    p.add_argument("--warmup-steps", type=int, default=0, help="untimed steps first")
    p.add_argument("--amp", action="store_true", help="bf16 autocast (CUDA)")
    p.add_argument("--channels-last", action="store_true", help="resnet: NHWC layout")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--alone", action="store_true",
                   help="no pipeline: each process trains its own stage by itself on made-up "
                        "inputs, to measure what S stages would give with no bubble")
    p.add_argument("--dry-run", action="store_true",
                   help="check the placement and batch against the job ($SLURM_NTASKS tasks inside "
                        "a batch script), print the layout, and exit (0, or 2 with the reason)")
    p.add_argument("--save-weights", type=Path, default=None,
                   help="pipeline 0 writes every stage's weights here (stage<N>.pt) at the end")
    p.add_argument("--results-json", type=Path, default=None, help="rank 0 writes the results here")
    return p


def check_sizes(args: argparse.Namespace, placed: placement.Placement, blocks: int) -> str | None:
    """Why the batch or the stage count cannot work, or None."""
    if placed.stages > blocks:
        return f"{placed.stages} stages for a model of {blocks} blocks: use at most {blocks}"
    if args.global_batch % placed.pipelines:
        return (f"--global-batch {args.global_batch} does not split evenly over "
                f"{placed.pipelines} pipeline(s)")
    local = args.global_batch // placed.pipelines
    if placed.stages > 1 and local % args.microbatches:
        return (f"each pipeline's batch of {local} does not split into {args.microbatches} "
                "equal microbatches")
    return None


def make_data(spec: ModelSpec, global_batch: int, pipe: int, pipelines: int,
              device: torch.device, channels_last: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """This pipeline's rows of one fixed global batch (every process draws the same batch)."""
    generator = torch.Generator().manual_seed(1234)
    x = torch.randn((global_batch, *spec.sample_shape()), generator=generator)
    y = torch.randint(0, spec.classes, (global_batch,), generator=generator)
    rows = slice(pipe * global_batch // pipelines, (pipe + 1) * global_batch // pipelines)
    x, y = x[rows].to(device), y[rows].to(device)
    if channels_last and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, y


def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    # Mean over the microbatch; the schedule divides the summed gradients by the microbatch
    # count (scale_grads=True), so the step sees the gradient of the mean over the whole batch.
    return F.cross_entropy(output.float(), target)


def make_optimizer(args: argparse.Namespace, params: list[torch.nn.Parameter],
                   device: torch.device) -> torch.optim.Optimizer:
    if args.optimizer == "adamw":  # fused: no temporary copy of all the parameters
        return torch.optim.AdamW(params, lr=args.lr, fused=device.type == "cuda")
    return torch.optim.SGD(params, lr=args.lr, momentum=0.9)


def average_over_pipelines(module: torch.nn.Module, group: tdist.ProcessGroup, pipelines: int) -> None:
    """Average each gradient over the P copies of this stage: one flat all-reduce."""
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    tdist.all_reduce(flat, group=group)
    flat.div_(pipelines)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step_factory(args: argparse.Namespace, placed: placement.Placement, stage_index: int,
                       mesh: DeviceMesh, module: Stage, device: torch.device,
                       x: torch.Tensor, y: torch.Tensor) -> Step:
    """A function that runs one training step and returns this process's loss (or None)."""
    optimizer = make_optimizer(args, list(module.parameters()), device)
    if placed.stages == 1:
        # One process trains the bare module: DDP's gradient buckets would cost a copy of the grads.
        model = module if placed.pipelines == 1 else DDP(
            module, process_group=mesh.get_group("dp"),
            device_ids=[device.index] if device.type == "cuda" else None)

        def plain_step() -> torch.Tensor | None:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()
        return plain_step

    stage = PipelineStage(module, stage_index, placed.stages, device, group=mesh.get_group("pp"))
    # loss_fn on every stage, not only the last: without it the schedule skips backward and the
    # first stage waits forever for gradients that never come.
    schedule = SCHEDULES[args.schedule](stage, n_microbatches=args.microbatches, loss_fn=loss_fn)
    dp_group = mesh.get_group("dp")
    last = stage_index == placed.stages - 1

    def pipeline_step() -> torch.Tensor | None:
        optimizer.zero_grad(set_to_none=True)
        losses: list[torch.Tensor] = []
        if stage_index == 0:
            schedule.step(x, target=y if last else None, losses=losses if last else None)
        elif last:
            schedule.step(target=y, losses=losses)
        else:
            schedule.step()
        if placed.pipelines > 1:
            average_over_pipelines(module, dp_group, placed.pipelines)
        optimizer.step()
        return torch.stack(losses).mean().detach() if last else None
    return pipeline_step


def alone_step_factory(args: argparse.Namespace, placed: placement.Placement, stage_index: int,
                       module: Stage, device: torch.device, x: torch.Tensor, y: torch.Tensor,
                       in_shape: tuple[int, ...]) -> Step:
    """One step of this stage by itself: the same microbatches, no neighbours, no bubble."""
    optimizer = make_optimizer(args, list(module.parameters()), device)
    micro = x.shape[0] // args.microbatches
    last = stage_index == placed.stages - 1
    dtype = torch.bfloat16 if args.amp else torch.float32
    fake_in = None if stage_index == 0 else torch.randn((micro, *in_shape[1:]), device=device, dtype=dtype)
    grad_out: list[torch.Tensor] = []

    def step() -> torch.Tensor | None:
        optimizer.zero_grad(set_to_none=True)
        for m in range(args.microbatches):  # one microbatch in flight: forward, then backward
            inp = x[m * micro:(m + 1) * micro] if fake_in is None else fake_in.requires_grad_()
            out = module(inp)
            if last:
                (loss_fn(out, y[m * micro:(m + 1) * micro]) / args.microbatches).backward()
            else:
                if not grad_out:
                    grad_out.append(torch.randn_like(out))
                out.backward(grad_out[0])
        optimizer.step()
        return None
    return step


def train(args: argparse.Namespace, dist: dist_env.DistEnv, spec: ModelSpec, placed: placement.Placement,
          costs: list[int], shapes: list[tuple[int, ...]], device: torch.device) -> dict:
    """Build this process's stage, train it, and return the run's results (the same on every rank)."""
    pipe_index, stage_index = placed.role(dist.rank)
    ranges = split(costs, placed.stages)
    mine = ranges[stage_index]
    mesh = DeviceMesh(device.type, placed.rank_grid(), mesh_dim_names=("dp", "pp"))
    if dist.is_main:
        print(placed.table(), flush=True)
        cut = ", ".join(f"stage {s}: blocks {r.start}-{r.stop - 1} "
                        f"({100 * sum(costs[i] for i in r) / sum(costs):.0f} % of FLOPs)"
                        for s, r in enumerate(ranges))
        print(f"model {args.model}: {len(costs)} blocks, {cut}", flush=True)
    torch.backends.cudnn.benchmark = True
    blocks = build_blocks(spec, device, mine)
    if args.channels_last and spec.name != "mlp":
        blocks = [b.to(memory_format=torch.channels_last) for b in blocks]
    module = Stage(blocks, mine.start, args.amp and device.type == "cuda")
    x, y = make_data(spec, args.global_batch, pipe_index, placed.pipelines, device, args.channels_last)
    if args.alone:
        step = alone_step_factory(args, placed, stage_index, module, device, x, y, shapes[mine.start])
    else:
        step = train_step_factory(args, placed, stage_index, mesh, module, device, x, y)
    reporter = placed.rank_grid()[0][-1]  # the last stage of pipeline 0 sees the loss

    for _ in range(args.warmup_steps):
        step()
    _sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    tdist.barrier()
    started = time.perf_counter()
    for n in range(1, args.steps + 1):
        loss = step()
        if loss is None or args.alone:
            continue
        if placed.pipelines > 1:  # each pipeline saw its own rows: the global loss is their mean
            tdist.all_reduce(loss, group=mesh.get_group("dp"))
            loss /= placed.pipelines
        if dist.rank == reporter:
            print(f"step {n} loss {loss.item():.6f}", flush=True)
    _sync(device)
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    per_rank = gather_objects({"rank": dist.rank, "pipeline": pipe_index, "stage": stage_index,
                               "seconds": seconds, "peak_gib": peak}, dist)
    if args.save_weights is not None and pipe_index == 0:
        args.save_weights.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.detach().cpu() for k, v in module.blocks.state_dict().items()},
                   args.save_weights / f"stage{stage_index}.pt")
    slowest = max(r["seconds"] for r in per_rank)
    return {
        "mode": "alone" if args.alone else ("ddp" if placed.stages == 1 else "pipeline"),
        "model": args.model, "pipelines": placed.pipelines, "stages": placed.stages,
        "schedule": None if placed.stages == 1 else args.schedule,
        "microbatches": args.microbatches, "global_batch": args.global_batch,
        "amp_bf16": module.amp, "steps": args.steps, "seconds": slowest,
        "samples_per_sec": args.global_batch * args.steps / slowest,
        "stage_blocks": [[r.start, r.stop - 1] for r in ranges],
        "stage_flops_share": [sum(costs[i] for i in r) / sum(costs) for r in ranges],
        "bubble_theory": (placed.stages - 1) / (args.microbatches + placed.stages - 1),
        "per_rank": per_rank, "placement": placed.rank_grid(), "launcher": dist.launcher,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    dist = dist_env.read_env()
    # A batch script is not yet a step: the job's task count is what the step will have.
    world_size = int(os.environ.get("SLURM_NTASKS", dist.world_size)) if args.dry_run else dist.world_size
    spec = ModelSpec(args.model, args.classes, args.image_size, args.width, args.depth)
    costs, shapes = block_costs(spec)
    # Every check runs before the process group: a wrong placement or batch costs no GPU time.
    try:
        stages = args.stages or (None if args.placement else world_size)
        placed = placement.resolve(args.placement, stages, world_size)
        problem = check_sizes(args, placed, len(costs))
    except placement.PlacementError as exc:
        problem = str(exc)
    if problem:
        if dist.is_main:
            print(f"pipeline: error: {problem}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(placed.table())
        print(f"model {args.model}: stages cut at blocks "
              f"{', '.join(f'{r.start}-{r.stop - 1}' for r in split(costs, placed.stages))}; ok")
        return 0
    device = dist_env.local_device(args.device, dist.local_rank)
    dist_env.init_process_group(dist, "nccl" if device.type == "cuda" else "gloo")
    try:
        result = train(args, dist, spec, placed, costs, shapes, device)
    except torch.OutOfMemoryError as exc:
        peak = torch.cuda.max_memory_allocated(device) / 2**30
        print(f"pipeline: error: rank {dist.rank} ran out of GPU memory on {device} "
              f"({peak:.1f} GiB allocated at the peak): {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    if dist.is_main:
        print(f"{result['mode']}: {placed.pipelines} x {placed.stages}, {result['schedule'] or '-'}, "
              f"{args.microbatches} microbatches, {result['samples_per_sec']:.1f} samples/s", flush=True)
        if args.results_json is not None:
            write_json(args.results_json, result)
    dist_env.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
