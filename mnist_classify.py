"""Lesson 1: train a small CNN on MNIST with one GPU.

This is the classic pytorch/examples MNIST script (same Net, Adadelta, StepLR and defaults),
plus the switches that the later lessons turn: DataLoader workers, speed flags, a GPU-resident
data path (digits/gpu_resident.py), a large-batch learning-rate recipe (digits/recipes.py), CUDA
graphs (digits/graphed_step.py), an offline synthetic digit set (digits/data.py), a metrics file and
TensorBoard curves. The run context it prints first comes from digits/run_context.py. See `-h`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

from digits import recipes
from digits import synthetic
from digits import tensorboard_log
from digits.gpu_resident import ResidentLoader
from digits.graphed_step import GraphedStep
from digits.data import SetupError, load_datasets, shuffled
from profiling.cpu_rule import workers_for_cpus
from digits.run_context import print_context, run_context, usable_cpus

try:  # line_profiler's `profile` is a no-op unless the script runs under `kernprof -l` (or LINE_PROFILE=1)
    from line_profiler import profile
except ImportError:  # a bare torch environment can still run the lesson, just not profile it
    def profile(func):
        return func


class Net(nn.Module):
    """The pytorch/examples MNIST network: two convolutions, max-pool, two dense layers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


# ----------------------------------------------------------------------------- command line
def _number(kind: type, minimum: float, strict: bool = False, auto: bool = False) -> Callable[[str], object]:
    """An argparse type: `kind` values >= minimum (> with strict), optionally the word 'auto'."""
    rule = f"{'greater than' if strict else 'at least'} {minimum}" + (" or 'auto'" if auto else "")

    def convert(text: str) -> object:
        if auto and text == "auto":
            return "auto"
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number {rule}, got {text!r}") from None
        if value < minimum or (strict and value == minimum) or value != value:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
        return value
    return convert


positive_int = _number(int, 1)       # also the later lessons' argparse types
non_negative_int = _number(int, 0)
_positive_float = _number(float, 0, strict=True)
_workers = _number(int, 0, auto=True)


def build_parser() -> argparse.ArgumentParser:
    """The flags of pytorch/examples' mnist, then the workshop's; the help text is the manual."""
    p = argparse.ArgumentParser(
        description="PyTorch MNIST example, ready to profile and tune on a Slurm cluster.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--batch-size", type=positive_int, default=64, metavar="N",
                   help="input batch size for training")
    p.add_argument("--test-batch-size", type=positive_int, default=1000, metavar="N",
                   help="input batch size for testing")
    p.add_argument("--epochs", type=positive_int, default=14, metavar="N", help="number of epochs to train")
    p.add_argument("--lr", type=_positive_float, default=1.0, metavar="LR",
                   help="learning rate (of --optimizer; with --lr-scaling, the rate at batch 64)")
    p.add_argument("--gamma", type=_positive_float, default=0.7, metavar="M",
                   help="learning-rate decay per epoch (StepLR)")
    p.add_argument("--no-cuda", action="store_true", help="never use a GPU (same as --device cpu)")
    p.add_argument("--dry-run", action="store_true", help="one batch per epoch, to check that the script runs")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="random seed for weights, dropout and shuffling")
    p.add_argument("--log-interval", type=positive_int, default=10, metavar="N",
                   help="batches between training-loss lines (each line waits for the GPU)")
    p.add_argument("--save-model", action="store_true", help="write the trained weights to mnist_cnn.pt")

    g = p.add_argument_group("data loading (lesson 03)")
    g.add_argument("--num-workers", type=_workers, default=1, metavar="N|auto",
                   help="DataLoader worker processes; 'auto' = the CPUs this job may use minus the main "
                        "process's (2 on a GPU with pinned memory, else 1: profiling/cpu_rule.py). "
                        "The default 1 is the lesson's bottleneck")
    g.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None,
                   help="page-locked host batches for faster copies (default: on with CUDA)")
    g.add_argument("--persistent-workers", action="store_true",
                   help="keep workers alive between epochs instead of restarting them")
    g.add_argument("--prefetch-factor", type=positive_int, default=None, metavar="N",
                   help="batches each worker prepares ahead (torch's default is 2)")
    g.add_argument("--augment", choices=["none", "heavy"], default="none",
                   help="heavy: random affine warp and brightness/contrast jitter of each training image, "
                        "a CPU-heavy loader for checking the worker advice beyond plain MNIST")

    g = p.add_argument_group("data source")
    g.add_argument("--data-dir", type=Path, default=Path(os.environ.get("MNIST_DATA", "./data")),
                   help="where MNIST lives (MNIST/raw/...); the MNIST_DATA environment variable sets the default")
    g.add_argument("--download", action="store_true",
                   help="download MNIST with torchvision first (needs internet: do it on a login node)")
    g.add_argument("--synthetic", action="store_true",
                   help="use generated digits in MNIST's file layout under DATA_DIR/synthetic (works offline)")
    g.add_argument("--synthetic-seed", type=int, default=0, metavar="S",
                   help="seed of the generated digit set (separate from --seed so runs share one set)")
    g.add_argument("--train-samples", type=positive_int, default=None, metavar="N",
                   help="train on the first N images (with --synthetic, also how many are generated)")
    g.add_argument("--test-samples", type=positive_int, default=None, metavar="N",
                   help="test on the first N images (with --synthetic, also how many are generated)")

    g = p.add_argument_group("speed (lesson 04)")
    g.add_argument("--amp", action="store_true", help="bf16 autocast on CUDA (ignored, with a note, elsewhere)")
    g.add_argument("--channels-last", action="store_true", help="NHWC memory layout for model and inputs")
    g.add_argument("--compile", action="store_true", help="torch.compile the model (the first epoch pays the compile)")
    g.add_argument("--gpu-resident", action="store_true",
                   help="keep the whole uint8 data set on the device, normalise it there and draw "
                        "shuffled batches by index: no DataLoader, no workers")
    g.add_argument("--cuda-graph", action="store_true",
                   help="replay each training step (forward, backward, optimizer) as one captured CUDA "
                        "graph: one launch instead of dozens (CUDA only; ignored, with a note, elsewhere)")
    g.add_argument("--cudnn-benchmark", action="store_true",
                   help="let cuDNN time its convolution algorithms for each new input shape and keep the "
                        "fastest (the first steps pay the search)")
    recipes.add_args(p)

    g = p.add_argument_group("run control and measurement")
    g.add_argument("--device", choices=["auto", "cuda", "cpu", "mps"], default="auto",
                   help="where to train; auto = cuda, then mps, then cpu")
    g.add_argument("--max-steps", type=positive_int, default=None, metavar="N",
                   help="stop training after N optimizer steps in total (tests, quick demos)")
    g.add_argument("--metrics-json", type=Path, default=None, metavar="PATH",
                   help="write epoch times, images/s, data-wait time, test results and settings as JSON")
    g.add_argument("--sync-timing", action="store_true",
                   help="wait for the GPU at each step boundary so that data-wait time excludes queued "
                        "GPU work (slightly slower; CUDA only)")
    g.add_argument("--tensorboard", type=Path, default=None, metavar="DIR",
                   help="write TensorBoard curves to DIR, one point per epoch: loss, test accuracy, "
                        "images/s, data-wait share (view: tensorboard --logdir DIR)")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.no_cuda and args.device == "cuda":
        parser.error("--no-cuda contradicts --device cuda")
    if args.no_cuda:
        args.device = "cpu"
    if args.cuda_graph and args.compile:
        parser.error("--cuda-graph and --compile both take over the training step: pick one")
    if args.augment != "none" and args.gpu_resident:
        parser.error("--augment transforms images in the DataLoader's workers; --gpu-resident has no DataLoader")
    return args


# ----------------------------------------------------------------------------- where am I running
def resolve_num_workers(requested: int | str, gpus: int = 0, pin_memory: bool | None = None) -> int:
    """'auto' = the workers the kit's one CPU rule fits in this job's CPUs beside the main process."""
    return workers_for_cpus(usable_cpus(), gpus, pin_memory) if requested == "auto" else int(requested)


def resolve_device(name: str) -> torch.device:
    """Turn --device into a torch.device; asking for hardware that is absent is a SetupError."""
    mps = getattr(torch.backends, "mps", None)
    mps_ok = bool(mps and mps.is_available())
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if mps_ok else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise SetupError("--device cuda: no CUDA GPU is visible "
                         f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
    if name == "mps" and not mps_ok:
        raise SetupError("--device mps: Apple's MPS backend is not available here")
    if name not in {"cuda", "cpu", "mps"}:
        raise SetupError(f"unknown device {name!r}: use auto, cuda, cpu or mps")
    return torch.device(name)


# ----------------------------------------------------------------------------- data
def make_loaders(args: argparse.Namespace, train_ds: Dataset, test_ds: Dataset,
                 device: torch.device, train_sampler: Sampler | None = None,
                 ) -> tuple[DataLoader | ResidentLoader, DataLoader | ResidentLoader]:
    """DataLoaders built from the flags, or ResidentLoaders with --gpu-resident.

    train_sampler replaces the seeded shuffle (the DDP lesson passes a DistributedSampler).
    """
    order = shuffled(train_ds, args.seed) if train_sampler is None else train_sampler
    if args.gpu_resident:
        return (ResidentLoader(train_ds, args.batch_size, device, order, args.channels_last),
                ResidentLoader(test_ds, args.test_batch_size, device, None, args.channels_last))
    pin = effective_pin_memory(args, device)
    workers = resolve_num_workers(args.num_workers, int(device.type == "cuda"), pin)
    common = {"num_workers": workers, "pin_memory": pin}
    if workers > 0:
        common["persistent_workers"] = args.persistent_workers
        if args.prefetch_factor is not None:
            common["prefetch_factor"] = args.prefetch_factor
    # The loader draws worker seeds from its own generator, not the global one that dropout uses.
    worker_seeds = torch.Generator().manual_seed(args.seed)
    return (DataLoader(train_ds, batch_size=args.batch_size, sampler=order, generator=worker_seeds, **common),
            DataLoader(test_ds, batch_size=args.test_batch_size, shuffle=False, **common))


def effective_pin_memory(args: argparse.Namespace, device: torch.device) -> bool:
    """Pinning only helps copies to a CUDA device; the default follows the device."""
    return device.type == "cuda" and args.pin_memory is not False and not args.gpu_resident


# ----------------------------------------------------------------------------- train and test
def _autocast(enabled: bool, device: torch.device):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


@profile
def train(args: argparse.Namespace, model: nn.Module, device: torch.device, train_loader, optimizer,
          epoch: int, step_hook: Callable[[int, float], bool] | None = None, *,
          max_steps: int | None = None, step: GraphedStep | None = None) -> dict:
    """One epoch.  Returns steps, images, seconds and data-wait seconds for the metrics file.

    Data wait is the time the loop header spends getting the next batch.  CUDA runs behind the
    Python code, so without --sync-timing some GPU time can show up there; with it we wait for
    the GPU at the end of each step and the split is exact (at some cost in speed).
    step_hook(batch_idx, loss) runs after each optimizer step; returning True ends the epoch.
    step, if given, does the zero_grad/forward/backward/step in one call (a CUDA graph).
    """
    model.train()
    use_amp = args.amp and device.type == "cuda"
    sync = args.sync_timing and device.type == "cuda"
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    limit = args.max_steps if max_steps is None else max_steps
    steps, images, data_wait, stopped = 0, 0, 0.0, False
    loss_sum = torch.zeros((), device=device)  # summed on the device: no wait for the GPU per step
    start = tick = time.perf_counter()
    for batch_idx, (data, target) in enumerate(train_loader):
        data_wait += time.perf_counter() - tick
        data = data.to(device, memory_format=memory_format, non_blocking=True)
        target = target.to(device, non_blocking=True)
        if step is not None:
            loss = step(data, target)
        else:
            optimizer.zero_grad()
            with _autocast(use_amp, device):
                output = model(data)
                loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
        loss_sum += loss.detach().float()
        steps += 1
        images += len(target)
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * args.batch_size, len(train_loader.dataset),
                100.0 * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break
        if step_hook is not None and step_hook(batch_idx, loss.item()):
            stopped = True
            break
        if limit is not None and steps >= limit:
            stopped = True
            break
        if sync:
            torch.cuda.synchronize()
        tick = time.perf_counter()
    if device.type == "cuda":
        torch.cuda.synchronize()  # the epoch ends when the GPU is done, not when Python is
    return {"steps": steps, "images": images, "seconds": time.perf_counter() - start,
            "data_wait_seconds": data_wait, "stopped": stopped, "loss": loss_sum.item() / max(steps, 1)}


def test(model: nn.Module, device: torch.device, test_loader, *, amp: bool = False,
         channels_last: bool = False) -> tuple[float, float]:
    """Average loss and accuracy (percent) over the test set."""
    model.eval()
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    test_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data = data.to(device, memory_format=memory_format)
            target = target.to(device)
            with _autocast(amp and device.type == "cuda", device):
                output = model(data)
            test_loss += F.nll_loss(output.float(), target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
            seen += len(target)
    test_loss /= seen
    accuracy = 100.0 * correct / seen
    print(f"\nTest set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{seen} ({accuracy:.2f}%)\n")
    return test_loss, accuracy


# ----------------------------------------------------------------------------- main
def settings(args: argparse.Namespace, device: torch.device, ctx: dict, train_ds: Dataset,
             test_ds: Dataset) -> dict:
    """What this run actually used (after 'auto' and device defaults), for the metrics file."""
    workers = 0 if args.gpu_resident else resolve_num_workers(args.num_workers, int(device.type == "cuda"),
                                                              effective_pin_memory(args, device))
    as_given = {name: getattr(args, name) for name in (
        "batch_size", "test_batch_size", "epochs", "lr", "gamma", "seed", "channels_last", "compile",
        "gpu_resident", "sync_timing", "max_steps", "cudnn_benchmark", "optimizer", "schedule", "warmup_epochs",
        "lr_scaling", "augment")}
    return {**as_given, "device": str(device), "num_workers": workers, "num_workers_requested": args.num_workers,
            "amp": args.amp and device.type == "cuda", "amp_requested": args.amp,
            "cuda_graph": args.cuda_graph and device.type == "cuda",
            "pin_memory": effective_pin_memory(args, device),
            "persistent_workers": args.persistent_workers and workers > 0,
            "prefetch_factor": args.prefetch_factor if workers > 0 else None,
            "cpus_allowed": ctx["cpus_allowed"], "gpus_visible": ctx["gpus_visible"], "host": ctx["host"],
            "slurm_job_id": ctx["slurm_job_id"], "torch_version": ctx["torch"],
            "data_source": "synthetic" if args.synthetic else "mnist", "data_path": ctx["data_source"],
            "train_samples": len(train_ds), "test_samples": len(test_ds)}


def write_json(path: Path, payload: dict) -> None:
    """Write through a temporary file so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    synthetic.write_atomic(path, (json.dumps(payload, indent=2) + "\n").encode())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        device = resolve_device(args.device)
        ctx = run_context(args, device)
        print_context(ctx)
        if args.metrics_json is not None and args.metrics_json.is_dir():
            raise SetupError(f"--metrics-json {args.metrics_json} is a directory; give a file name")
        board = None if args.tensorboard is None else tensorboard_log.EpochWriter(
            tensorboard_log.check_dir(args.tensorboard))
        torch.manual_seed(args.seed)
        train_ds, test_ds = load_datasets(args)
    except (SetupError, tensorboard_log.TensorBoardDirError) as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2
    if args.amp and device.type != "cuda":
        print(f"note: --amp uses bf16 autocast on CUDA only; training in fp32 on {device.type}")
    graph = args.cuda_graph and device.type == "cuda"
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    if args.cuda_graph and not graph:
        print(f"note: --cuda-graph needs CUDA; running the steps eagerly on {device.type}")
    train_loader, test_loader = make_loaders(args, train_ds, test_ds, device)

    net = Net().to(device)
    if args.channels_last:
        net = net.to(memory_format=torch.channels_last)
    model = torch.compile(net) if args.compile else net
    recipe = recipes.build(args, net.parameters(), len(train_loader), device, graphable=graph)
    step = GraphedStep(model, recipe.optimizer, args.amp) if graph else None

    epoch_seconds, epoch_images, epoch_wait, epoch_accuracy, data_wait, steps, images = [], [], [], [], 0.0, 0, 0
    test_loss, accuracy, test_seconds = float("nan"), float("nan"), 0.0
    started_at = time.time()  # wall clock: jobs packed on one GPU are lined up by it (lesson 10)
    for epoch in range(1, args.epochs + 1):
        left = None if args.max_steps is None else args.max_steps - steps
        stats = train(args, model, device, train_loader, recipe.optimizer, epoch, max_steps=left, step=step)
        epoch_seconds.append(stats["seconds"])
        epoch_images.append(stats["images"])
        epoch_wait.append(stats["data_wait_seconds"])
        data_wait += stats["data_wait_seconds"]
        steps += stats["steps"]
        images += stats["images"]
        t0 = time.perf_counter()
        test_loss, accuracy = test(model, device, test_loader, amp=args.amp, channels_last=args.channels_last)
        test_seconds += time.perf_counter() - t0
        epoch_accuracy.append(accuracy)
        if board is not None:
            board.epoch(epoch, stats, test_loss, accuracy)
        recipe.end_epoch()
        if stats["stopped"]:
            break

    ended_at = time.time()
    if board is not None:
        board.close()
    train_seconds = sum(epoch_seconds)
    print(f"trained {steps} steps, {images} images in {train_seconds:.2f} s "
          f"({images / train_seconds:.0f} images/s); data wait {data_wait:.2f} s")
    if args.save_model:
        torch.save(net.state_dict(), "mnist_cnn.pt")
    if args.metrics_json is not None:
        write_json(args.metrics_json, {
            "images_per_sec": images / train_seconds, "epoch_seconds": epoch_seconds,
            "epoch_images": epoch_images,
            "epoch_data_wait_seconds": epoch_wait, "epoch_test_accuracy": epoch_accuracy,
            "data_wait_seconds": data_wait, "data_wait_fraction": data_wait / train_seconds,
            "test_loss": test_loss, "test_accuracy": accuracy, "test_seconds": test_seconds,
            "steps": steps, "train_images": images, "train_started_at": started_at, "train_ended_at": ended_at,
            "settings": settings(args, device, ctx, train_ds, test_ds)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
