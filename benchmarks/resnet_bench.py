"""Backs docs/results.md, "Lessons 5 and 6: DDP scaling on one host".
A compute-bound DDP scaling benchmark: torchvision's ResNet on generated ImageNet-sized data.

MNIST's small CNN spends most of a step waiting for the gradient all-reduce and the loader, so
more GPUs barely help. A ResNet-50 step is long enough to hide the all-reduce behind backward(),
which is the case DDP is built for. The data is generated once and stays on the GPU, so the
number measures the model and the communication, not the file system.

By default the batch is PER GPU (weak scaling, as in NVIDIA's published numbers): N GPUs process
N times as many images a step, and perfect scaling keeps images/s per GPU constant. With
``--global-batch`` the batch of a step is fixed and split over the N GPUs (strong scaling, as in
DeepPool): each GPU's share shrinks as GPUs are added, until a step is too small to pay for the
all-reduce (lesson 10, strong scaling).

    python benchmarks/resnet_bench.py --amp --channels-last --results-json r1.json
    torchrun --standalone --nproc_per_node=2 benchmarks/resnet_bench.py --amp --channels-last \\
        --results-json r2.json --baseline-json r1.json        # adds the scaling efficiency
    torchrun --standalone --nproc_per_node=2 benchmarks/resnet_bench.py --amp --global-batch 128
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from mnist_classify import positive_int, write_json
from multi_gpu import dist_env
from multi_gpu.preemption import PreemptionGuard
from multi_gpu.resumable import CheckpointHook, gather_objects

MODELS = ("resnet50", "resnet18")


def build_parser() -> argparse.ArgumentParser:
    # Option names must not be prefixes of torchrun's own options (torchrun abbreviates).
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument("--per-gpu-batch", type=positive_int, default=256, metavar="N",
                   help="images per process per step (weak scaling)")
    p.add_argument("--global-batch", type=positive_int, default=None, metavar="N",
                   help="images per step over all processes, split evenly (strong scaling; wins over "
                        "--per-gpu-batch); must divide by the process count")
    p.add_argument("--image-size", type=positive_int, default=224, metavar="PX")
    p.add_argument("--classes", type=positive_int, default=1000)
    p.add_argument("--warmup-steps", type=positive_int, default=20,
                   help="untimed steps first (cuDNN autotuning, NCCL set-up, allocator warm-up)")
    p.add_argument("--steps", type=positive_int, default=50, help="timed steps")
    p.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                   help="time the steps of this many seconds instead of --steps (a job that must "
                        "outlast another one, lesson 10's foreground/background)")
    p.add_argument("--step-times", action="store_true",
                   help="record each timed step's end (wall clock, synchronised): lets another "
                        "job's window be cut out of this one's")
    p.add_argument("--amp", action="store_true", help="bf16 autocast (CUDA)")
    p.add_argument("--channels-last", action="store_true", help="NHWC layout for model and data")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--results-json", type=Path, default=None, help="rank 0 writes the results here")
    p.add_argument("--baseline-json", type=Path, default=None,
                   help="results of a 1-GPU run: adds speed-up and scaling efficiency")
    p.add_argument("--checkpoint-dir", type=Path, default=None,
                   help="after timing, write one full checkpoint here and report its cost")
    p.add_argument("--until-signal", action="store_true",
                   help="after warm-up, train until SIGUSR1/SIGTERM, checkpoint, exit (measures "
                        "signal-to-exit; needs --checkpoint-dir)")
    return p


def efficiency(per_gpu: float, world_size: int, baseline: dict | None) -> dict:
    """Speed-up and efficiency against a 1-GPU run of the same settings."""
    if baseline is None:
        return {}
    base = baseline["images_per_sec_per_gpu"]
    return {"baseline_images_per_sec_per_gpu": base,
            "speedup": per_gpu * world_size / base,
            "scaling_efficiency": per_gpu / base}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.until_signal and args.checkpoint_dir is None:
        parser.error("--until-signal needs --checkpoint-dir")
    baseline = None
    if args.baseline_json is not None:
        try:
            baseline = json.loads(args.baseline_json.read_text())
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read --baseline-json {args.baseline_json}: {exc}")
    if args.duration is not None and not args.duration > 0:
        parser.error(f"--duration {args.duration} must be a positive number of seconds")
    dist = dist_env.read_env()
    if args.global_batch is not None:  # before any process group: every rank refuses alike
        if args.global_batch % dist.world_size:
            lower = args.global_batch - args.global_batch % dist.world_size
            parser.error(f"--global-batch {args.global_batch} does not divide evenly over "
                         f"{dist.world_size} processes (try {lower or dist.world_size} or "
                         f"{lower + dist.world_size})")
        args.per_gpu_batch = args.global_batch // dist.world_size
    device = dist_env.local_device(args.device, dist.local_rank)
    dist_env.init_process_group(dist, "nccl" if device.type == "cuda" else "gloo")
    torch.backends.cudnn.benchmark = True
    import torchvision  # after CUDA set-up; weights=None: nothing is downloaded

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.classes)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(device, memory_format=memory_format)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    generator = torch.Generator(device=device).manual_seed(1234 + dist.rank)
    images = torch.randn(args.per_gpu_batch, 3, args.image_size, args.image_size, device=device,
                         generator=generator).contiguous(memory_format=memory_format)
    labels = torch.randint(0, args.classes, (args.per_gpu_batch,), device=device, generator=generator)
    use_amp = args.amp and device.type == "cuda"

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup_steps):
        step()
    _sync(device)
    torch.distributed.barrier()
    guard = PreemptionGuard().install() if args.until_signal else PreemptionGuard()
    hook = CheckpointHook(args.checkpoint_dir or Path("."), 0, 2, model, optimizer, None,
                          dist, device, guard)
    if dist.is_main and args.until_signal:
        print("resnet_bench: warmed up, training until a signal", flush=True)
    started, wall_started = time.perf_counter(), time.time()
    steps, step_ends = 0, []
    while args.until_signal or (steps < args.steps if args.duration is None
                                else time.perf_counter() - started < args.duration):
        step()
        steps += 1
        if args.step_times:
            _sync(device)
            step_ends.append(time.time())
        if args.until_signal and hook(steps, 0.0):
            break
    _sync(device)
    seconds = time.perf_counter() - started
    per_rank = gather_objects(args.per_gpu_batch * steps / seconds, dist)
    result = {
        "benchmark": f"{args.model}{'-bf16' if use_amp else ''}{'-cl' if args.channels_last else ''}",
        "model": args.model, "world_size": dist.world_size, "launcher": dist.launcher,
        "scaling": "weak" if args.global_batch is None else "strong",
        "per_gpu_batch": args.per_gpu_batch, "global_batch": args.per_gpu_batch * dist.world_size,
        "image_size": args.image_size, "amp_bf16": use_amp, "channels_last": args.channels_last,
        "warmup_steps": args.warmup_steps, "steps": steps, "seconds": seconds,
        "images_per_sec_total": sum(per_rank), "images_per_sec_per_gpu": sum(per_rank) / dist.world_size,
        "per_rank_images_per_sec": per_rank, "device": str(device),
        "timed_start": wall_started, "timed_end": wall_started + seconds,
        **({"step_ends": step_ends} if args.step_times else {}),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "torchvision": torchvision.__version__,
    }
    result.update(efficiency(result["images_per_sec_per_gpu"], dist.world_size, baseline))
    if args.checkpoint_dir is not None:
        if not args.until_signal:
            hook.save()
        saved = sorted(args.checkpoint_dir.glob("ckpt-*.pt"))
        result["checkpoint_seconds"] = hook.save_seconds[-1]
        result["checkpoint_bytes"] = saved[-1].stat().st_size if saved and dist.is_main else None
    if args.until_signal:
        result["signal"] = guard.signal_name
        result["signal_to_checkpointed_seconds"] = (
            time.monotonic() - guard.received_at if guard.received_at else None)
    if dist.is_main:
        print(json.dumps(result, indent=1), flush=True)
        if args.results_json is not None:
            write_json(args.results_json, result)
    dist_env.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
