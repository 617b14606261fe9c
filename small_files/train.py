"""Lesson 9: ResNet-18 on an image folder of many small JPEGs, or on the same images in shards.

Lesson 1's script (mnist_classify.py) with a different model and data source: its train() and
test(), device choice, context block, seeded order and DataLoader flags are imported, not
copied. What changes:

1. the data is an ImageFolder of JPEGs (`python -m small_files generate`) or the WebDataset
   shards made from it (`python -m small_files shard`); --data points at either;
2. each image is decoded and augmented in the loader's workers, so loading is real work; with
   --decode gpu the workers only read bytes, and the batch is decoded and augmented on the GPU;
3. the model is torchvision's ResNet-18, trained with SGD.

With the same --seed, the folder and the shards written with that seed give the same batches.

    python small_files/train.py --data data/small-files/train --epochs 1
    python small_files/train.py --data data/small-files/shards-64 --epochs 1 --decode gpu
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import DataLoader
from torchvision import datasets, models
from torchvision.datasets.folder import IMG_EXTENSIONS

import mnist_classify as lesson1
from digits.data import shuffled
from digits.graphed_step import GraphedStep
from small_files.shardread import ShardBatches, ddp_rank, first_jpeg
from small_files.shards import ShardError, is_shard_dir, read_index
from small_files.transforms import DecodeBatch, read_bytes, test_transform, train_transform


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Lesson 1's training and loader flags; the data flags are this lesson's."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", type=Path, required=True,
                   help="an ImageFolder (DIR/<class>/<image>.jpg) or a shard folder with index.json")
    p.add_argument("--val", type=Path, default=None,
                   help="an ImageFolder to test on (default: a 'val' folder beside the training folder, if any)")
    p.add_argument("--no-test", action="store_true", help="skip the test pass (timing runs)")
    p.add_argument("--image-size", type=lesson1.positive_int, default=128, metavar="PX",
                   help="side of the random crop the model trains on")
    p.add_argument("--batch-size", type=lesson1.positive_int, default=64, metavar="N")
    p.add_argument("--test-batch-size", type=lesson1.positive_int, default=256, metavar="N")
    p.add_argument("--epochs", type=lesson1.positive_int, default=1, metavar="N")
    p.add_argument("--lr", type=lesson1._positive_float, default=0.1, help="SGD learning rate (cosine decay)")
    p.add_argument("--seed", type=int, default=1, metavar="S",
                   help="seed of weights and order; shards written with --seed S hold the folder's order for S")
    p.add_argument("--log-interval", type=lesson1.positive_int, default=20, metavar="N")
    p.add_argument("--dry-run", action="store_true", help="one batch per epoch")
    p.add_argument("--decode", choices=["cpu", "gpu"], default="cpu",
                   help="cpu: the workers decode and augment each image; gpu: the workers read bytes, "
                        "the batch is decoded (nvJPEG) and augmented on the GPU")
    p.add_argument("--gpu-decode-share", type=_share, default=1.0, metavar="F",
                   help="with --decode gpu: the share of each batch that nvJPEG decodes; the workers decode "
                        "the rest (no augmentation), for when nvJPEG alone cannot keep up with the GPU. 0: the "
                        "workers decode every image and the GPU only crops, the fastest on the H100 and H200 "
                        "nodes measured (lesson 09, many small files)")
    p.add_argument("--gpu-decode-threads", type=lesson1.positive_int, default=3, metavar="N",
                   help="with --decode gpu: threads that decode and crop batches, taking turns (the batches keep "
                        "their order and crops), so one decodes while another crops; 3 fed an H100 best from "
                        "8 x 8 sheets (docs/small-files.md)")
    p.add_argument("--warmup-steps", type=int, default=0, metavar="N",
                   help="N untimed steps on random images first (weights restored after), so the timed "
                        "epoch starts with CUDA's and nvJPEG's start-up done")
    g = p.add_argument_group("data loading (as in lesson 1's script)")
    g.add_argument("--num-workers", type=lesson1._workers, default=1, metavar="N|auto")
    g.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--persistent-workers", action="store_true")
    g.add_argument("--prefetch-factor", type=lesson1.positive_int, default=None, metavar="N")
    g = p.add_argument_group("speed and measurement (as in lesson 1's script)")
    g.add_argument("--device", choices=["auto", "cuda", "cpu", "mps"], default="auto")
    g.add_argument("--amp", action="store_true", help="bf16 autocast on CUDA")
    g.add_argument("--channels-last", action="store_true")
    g.add_argument("--cuda-graph", action="store_true",
                   help="replay the training step as one CUDA graph (lesson 1's GraphedStep): one launch "
                        "instead of hundreds, so the main process keeps up with the GPU (CUDA only)")
    g.add_argument("--max-steps", type=lesson1.positive_int, default=None, metavar="N")
    g.add_argument("--sync-timing", action="store_true")
    g.add_argument("--metrics-json", type=Path, default=None, metavar="PATH")
    return p


class FirstBatch:
    """The loader, passed through, remembering the first batch's labels (folder = shards check).
    `dataset` is only asked for its length: the images an epoch reads."""

    def __init__(self, loader, images: int) -> None:
        self.loader, self.dataset, self.labels = loader, range(images), None

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for data, target in self.loader:
            if self.labels is None:
                self.labels = target.tolist()
            yield data, target


def loader_options(args: argparse.Namespace, device: torch.device) -> dict:
    """The DataLoader flags of lesson 1's script, for the loaders built here."""
    pin = lesson1.effective_pin_memory(args, device)
    workers = lesson1.resolve_num_workers(args.num_workers, int(device.type == "cuda"), pin)
    common = {"num_workers": workers, "pin_memory": pin}
    if workers > 0:
        common["persistent_workers"] = args.persistent_workers
        if args.prefetch_factor is not None:
            common["prefetch_factor"] = args.prefetch_factor
    return common


def gpu_packer(args: argparse.Namespace, loader_flags: dict, sample_jpeg: bytes):
    """--decode gpu: what packs a batch in a worker, with batch slots for the images the workers decode.

    The slots are sized from the first image; batches of other shapes are handed over the ordinary way.
    """
    from torchvision.io import ImageReadMode, decode_jpeg  # torchvision.io only on this path

    from small_files.gpu_batch import Packer, nvjpeg_count
    from small_files.slots import BatchSlots
    decoded = args.batch_size - nvjpeg_count(args.batch_size, args.gpu_decode_share)
    workers = loader_flags["num_workers"]
    args.batch_slots = None  # main() hands them to GpuBatches
    if decoded == 0 or workers == 0:
        return Packer(args.gpu_decode_share)
    try:
        shape = decode_jpeg(torch.frombuffer(bytearray(sample_jpeg), dtype=torch.uint8), mode=ImageReadMode.RGB).shape
    except RuntimeError:  # not a JPEG: no slots; the workers meet it, and say so, as they would have
        return Packer(args.gpu_decode_share)
    per_worker = loader_flags.get("prefetch_factor", 2) + 2  # what a worker may have queued, and one more each side
    args.batch_slots = BatchSlots(workers, per_worker, decoded, tuple(shape))
    return Packer(args.gpu_decode_share, args.batch_slots)


def make_loaders(args: argparse.Namespace, device: torch.device) -> tuple[FirstBatch, DataLoader | None, int]:
    """Training loader (folder: lesson 1's seeded sampler; shards: their written order), test loader, classes.

    With --decode gpu a training batch is (JPEG bytes, byte counts, labels), for gpu_batch.GpuBatches.
    """
    if not args.data.is_dir():
        raise lesson1.SetupError(f"--data {args.data}: no such folder")
    args.gpu_resident = False  # make_loaders of lesson 1's script reads it
    args.tile = 1  # images a sheet side, in tiled shards (shards.py)
    gpu = args.decode == "gpu"
    val = args.val
    if args.no_test:
        val = None
    elif val is None and (args.data.parent / "val").is_dir() and args.data.name == "train":
        val = args.data.parent / "val"
    test_ds = datasets.ImageFolder(str(val), test_transform(args.image_size)) if val else None
    common = loader_options(args, device)
    test_loader = DataLoader(test_ds, batch_size=args.test_batch_size, **common) if test_ds else None
    if is_shard_dir(args.data):
        index = read_index(args.data)
        args.tile = index.get("tile", 1)
        if gpu and args.tile > 1 and args.gpu_decode_share < 1:
            raise lesson1.SetupError(f"--gpu-decode-share {args.gpu_decode_share}: {args.data} holds tiled sheets, "
                                     "which nvJPEG decodes whole; leave the share at 1, or use untiled shards")
        make_batch = gpu_packer(args, common, first_jpeg(args.data)) if gpu else \
            DecodeBatch(train_transform(args.image_size))
        train_ds = ShardBatches(args.data, args.batch_size, make_batch, *ddp_rank())
        train_loader = DataLoader(train_ds, batch_size=None, **common)
        return FirstBatch(train_loader, train_ds.samples), test_loader, len(index["classes"])
    try:
        train_ds = datasets.DatasetFolder(str(args.data), read_bytes, extensions=IMG_EXTENSIONS) if gpu else \
            datasets.ImageFolder(str(args.data), train_transform(args.image_size))
    except (FileNotFoundError, RuntimeError) as exc:
        raise lesson1.SetupError(f"--data {args.data}: not an image folder or shard folder ({exc})") from None
    if gpu:  # lesson 1's loader, with the bytes packed per batch instead of stacked tensors
        packer = gpu_packer(args, common, read_bytes(train_ds.samples[0][0]))
        train_loader = DataLoader(train_ds, batch_size=args.batch_size, sampler=shuffled(train_ds, args.seed),
                                  generator=torch.Generator().manual_seed(args.seed), collate_fn=packer.samples,
                                  **common)
    else:
        train_loader, _ = lesson1.make_loaders(args, train_ds, train_ds, device)
    return FirstBatch(train_loader, len(train_ds)), test_loader, len(train_ds.classes)


def warm_up(args: argparse.Namespace, net: nn.Module, device: torch.device, optimizer: optim.Optimizer,
            classes: int, step: GraphedStep | None) -> None:
    """--warmup-steps steps on random images (a CUDA graph is captured there), then the weights
    and optimizer state as they were, restored in place so that a captured graph stays valid."""
    saved = copy.deepcopy(net.state_dict()), copy.deepcopy(optimizer.state_dict())
    fake = [(torch.randn(args.batch_size, 3, args.image_size, args.image_size),
             torch.randint(classes, (args.batch_size,))) for _ in range(args.warmup_steps)]
    quiet = argparse.Namespace(**{**vars(args), "log_interval": 1 << 30, "dry_run": False})
    lesson1.train(quiet, net, device, FirstBatch(fake, len(fake) * args.batch_size), optimizer, 0,
                  max_steps=args.warmup_steps, step=step)
    net.load_state_dict(saved[0])  # copies into the same tensors
    if step is None:
        optimizer.load_state_dict(saved[1])
        return
    with torch.no_grad():  # SGD's momentum starts at the first gradient: a zero buffer gives the same step
        for state in optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()


def resnet18(classes: int) -> nn.Module:
    """torchvision's ResNet-18 with log-probabilities out, so lesson 1's nll_loss applies."""
    return nn.Sequential(models.resnet18(num_classes=classes), nn.LogSoftmax(dim=1))


def make_optimizer(args: argparse.Namespace, net: nn.Module, device: torch.device) -> optim.Optimizer:
    """SGD with momentum and a little weight decay: the usual recipe for ResNets. For a CUDA graph
    the rate lives in a device tensor (the schedule fills it) and the step is one fused kernel."""
    if args.cuda_graph:
        return optim.SGD(net.parameters(), lr=torch.tensor(args.lr, device=device), momentum=0.9,
                         weight_decay=5e-5, fused=True)
    return optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-5)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = Path(sys.argv[0]).name
    try:
        device = lesson1.resolve_device(args.device)
        for flag, wanted in (("--decode gpu", args.decode == "gpu"), ("--cuda-graph", args.cuda_graph)):
            if wanted and device.type != "cuda":
                raise lesson1.SetupError(f"{flag} needs a CUDA device, and this run's device is {device.type}")
        torch.manual_seed(args.seed)
        train_loader, test_loader, classes = make_loaders(args, device)
    except (lesson1.SetupError, ShardError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    workers = train_loader.loader.num_workers
    kind = ("tiled shards" if args.tile > 1 else "shards") if is_shard_dir(args.data) else "image folder"
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    lesson1.print_context({"host": os.uname().nodename, "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
                           "cpus_allowed": lesson1.usable_cpus(), "gpus_visible": gpus,
                           "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                           "torch": torch.__version__, "device": str(device),
                           "data_source": f"{kind} {args.data} ({len(train_loader.dataset)} images, "
                                          f"{workers} workers{', on the GPU' if args.decode == 'gpu' else ''})"})
    net = resnet18(classes).to(device)
    if args.channels_last:
        net = net.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(args, net, device)
    step = GraphedStep(net, optimizer, args.amp) if args.cuda_graph else None
    scheduler = CosineAnnealingLR(optimizer, T_max=args.epochs)
    batches = train_loader
    if args.decode == "gpu":
        from small_files.gpu_batch import GpuBatches
        gpu = GpuBatches(train_loader.loader, device, args.image_size, args.seed,
                         torch.channels_last if args.channels_last else torch.contiguous_format,
                         slots=args.batch_slots, threads=args.gpu_decode_threads)
        batches = FirstBatch(gpu, len(train_loader.dataset))
        if args.warmup_steps:
            batches.loader.warm_up(args.batch_size)
    if args.warmup_steps:
        warm_up(args, net, device, optimizer, classes, step)
    seconds, data_wait, steps, images, accuracy = 0.0, 0.0, 0, 0, float("nan")
    epoch_seconds, epoch_images, epoch_wait = [], [], []  # per epoch: a sweep times the epochs after the first
    epoch_clock = []  # wall-clock start and end of each epoch: what a GPU sampler outside can cut its samples to
    try:
        for epoch in range(1, args.epochs + 1):
            left = None if args.max_steps is None else args.max_steps - steps
            began = time.time()
            stats = lesson1.train(args, net, device, batches, optimizer, epoch, max_steps=left, step=step)
            epoch_clock.append([began, time.time()])
            seconds += stats["seconds"]
            epoch_seconds.append(stats["seconds"])
            epoch_images.append(stats["images"])
            epoch_wait.append(stats["data_wait_seconds"])
            data_wait += stats["data_wait_seconds"]
            steps += stats["steps"]
            images += stats["images"]
            if test_loader is not None:
                _, accuracy = lesson1.test(net, device, test_loader, amp=args.amp, channels_last=args.channels_last)
            scheduler.step()
            if stats["stopped"]:
                break
    except ShardError as exc:  # raised in a worker: the loader re-raises it with the worker's traceback
        print(f"{prog}: error: {str(exc).strip().splitlines()[-1].removeprefix('small_files.shards.ShardError: ')}",
              file=sys.stderr)
        return 2
    print(f"first batch labels: {' '.join(map(str, (batches.labels or [])[:16]))}")
    print(f"trained {steps} steps, {images} images in {seconds:.2f} s ({images / seconds:.0f} images/s); "
          f"data wait {data_wait:.2f} s ({100 * data_wait / seconds:.0f}%)")
    if args.metrics_json is not None:
        lesson1.write_json(args.metrics_json, {
            "images_per_sec": images / seconds, "train_seconds": seconds,
            "epoch_seconds": epoch_seconds, "epoch_images": epoch_images,
            "epoch_data_wait_seconds": epoch_wait, "data_wait_seconds": data_wait,
            "data_wait_fraction": data_wait / seconds, "steps": steps, "train_images": images,
            "test_accuracy": accuracy, "first_batch_labels": batches.labels, "epoch_clock": epoch_clock,
            "loader_wait_seconds": getattr(batches.loader, "loader_wait", data_wait),
            "gpu_decode_seconds": getattr(batches.loader, "prepare", 0.0),
            "settings": {"data": str(args.data), "format": kind, "num_workers": workers,
                         "batch_size": args.batch_size, "image_size": args.image_size, "device": str(device),
                         "decode": args.decode, "gpu_decode_share": args.gpu_decode_share,
                         "gpu_decode_threads": args.gpu_decode_threads,
                         "tile": args.tile, "cuda_graph": args.cuda_graph,
                         "amp": args.amp and device.type == "cuda", "channels_last": args.channels_last,
                         "seed": args.seed, "cpus_allowed": lesson1.usable_cpus()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
