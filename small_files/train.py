"""Lesson 9: ResNet-18 on an image folder of many small JPEGs, or on the same images in shards.

Lesson 1's script (mnist_classify.py) with a different model and data source: its train() and
test(), device choice, context block, seeded order and DataLoader flags are imported, not
copied. What changes:

1. the data is an ImageFolder of JPEGs (`python -m small_files generate`) or the WebDataset
   shards made from it (`python -m small_files shard`); --data points at either;
2. each image is decoded and augmented in the loader's workers, so loading is real work;
3. the model is torchvision's ResNet-18, trained with SGD.

With the same --seed, the folder and the shards written with that seed give the same batches.

    python small_files/train.py --data data/small-files/train --epochs 1
    python small_files/train.py --data data/small-files/shards-64 --epochs 1
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import DataLoader
from torchvision import datasets, models

import mnist_classify as lesson1
from small_files.shards import ShardError, is_shard_dir, read_index, shard_dataset
from small_files.transforms import test_transform, train_transform



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
    g = p.add_argument_group("data loading (as in lesson 1's script)")
    g.add_argument("--num-workers", type=lesson1._workers, default=1, metavar="N|auto")
    g.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--persistent-workers", action="store_true")
    g.add_argument("--prefetch-factor", type=lesson1.positive_int, default=None, metavar="N")
    g = p.add_argument_group("speed and measurement (as in lesson 1's script)")
    g.add_argument("--device", choices=["auto", "cuda", "cpu", "mps"], default="auto")
    g.add_argument("--amp", action="store_true", help="bf16 autocast on CUDA")
    g.add_argument("--channels-last", action="store_true")
    g.add_argument("--max-steps", type=lesson1.positive_int, default=None, metavar="N")
    g.add_argument("--sync-timing", action="store_true")
    g.add_argument("--metrics-json", type=Path, default=None, metavar="PATH")
    return p


class FirstBatch:
    """The loader, passed through, remembering the first batch's labels (folder = shards check)."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader, self.dataset, self.labels = loader, loader.dataset, None

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for data, target in self.loader:
            if self.labels is None:
                self.labels = target.tolist()
            yield data, target


def make_loaders(args: argparse.Namespace, device: torch.device) -> tuple[FirstBatch, DataLoader | None, int]:
    """Training loader (folder: lesson 1's seeded sampler; shards: their written order), test loader, classes."""
    if not args.data.is_dir():
        raise lesson1.SetupError(f"--data {args.data}: no such folder")
    args.gpu_resident = False  # make_loaders of lesson 1's script reads it
    val = args.val
    if args.no_test:
        val = None
    elif val is None and (args.data.parent / "val").is_dir() and args.data.name == "train":
        val = args.data.parent / "val"
    test_ds = datasets.ImageFolder(str(val), test_transform(args.image_size)) if val else None
    if is_shard_dir(args.data):
        train_ds = shard_dataset(args.data, train_transform(args.image_size))
        classes = len(read_index(args.data)["classes"])
        workers = lesson1.resolve_num_workers(args.num_workers)
        common = {"num_workers": workers, "pin_memory": lesson1.effective_pin_memory(args, device)}
        if workers > 0:
            common["persistent_workers"] = args.persistent_workers
            if args.prefetch_factor is not None:
                common["prefetch_factor"] = args.prefetch_factor
        train_loader = DataLoader(train_ds, batch_size=args.batch_size, **common)
        test_loader = DataLoader(test_ds, batch_size=args.test_batch_size, **common) if test_ds else None
        return FirstBatch(train_loader), test_loader, classes
    try:
        train_ds = datasets.ImageFolder(str(args.data), train_transform(args.image_size))
    except (FileNotFoundError, RuntimeError) as exc:
        raise lesson1.SetupError(f"--data {args.data}: not an image folder or shard folder ({exc})") from None
    train_loader, test_loader = lesson1.make_loaders(args, train_ds, test_ds or train_ds, device)
    return FirstBatch(train_loader), test_loader if test_ds else None, len(train_ds.classes)


def resnet18(classes: int) -> nn.Module:
    """torchvision's ResNet-18 with log-probabilities out, so lesson 1's nll_loss applies."""
    return nn.Sequential(models.resnet18(num_classes=classes), nn.LogSoftmax(dim=1))


def make_optimizer(args: argparse.Namespace, net: nn.Module) -> optim.Optimizer:
    """SGD with momentum and a little weight decay: the usual recipe for ResNets."""
    return optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-5)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = Path(sys.argv[0]).name
    try:
        device = lesson1.resolve_device(args.device)
        torch.manual_seed(args.seed)
        train_loader, test_loader, classes = make_loaders(args, device)
    except (lesson1.SetupError, ShardError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    workers = lesson1.resolve_num_workers(args.num_workers)
    kind = "shards" if is_shard_dir(args.data) else "image folder"
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    lesson1.print_context({"host": os.uname().nodename, "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
                           "cpus_allowed": lesson1.usable_cpus(), "gpus_visible": gpus,
                           "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                           "torch": torch.__version__, "device": str(device),
                           "data_source": f"{kind} {args.data} ({len(train_loader.dataset)} images, "
                                          f"{workers} workers)"})
    net = resnet18(classes).to(device)
    if args.channels_last:
        net = net.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(args, net)
    scheduler = CosineAnnealingLR(optimizer, T_max=args.epochs)
    seconds, data_wait, steps, images, accuracy = 0.0, 0.0, 0, 0, float("nan")
    epoch_seconds, epoch_images, epoch_wait = [], [], []  # per epoch: a sweep times the epochs after the first
    try:
        for epoch in range(1, args.epochs + 1):
            left = None if args.max_steps is None else args.max_steps - steps
            stats = lesson1.train(args, net, device, train_loader, optimizer, epoch, max_steps=left)
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
    print(f"first batch labels: {' '.join(map(str, (train_loader.labels or [])[:16]))}")
    print(f"trained {steps} steps, {images} images in {seconds:.2f} s ({images / seconds:.0f} images/s); "
          f"data wait {data_wait:.2f} s ({100 * data_wait / seconds:.0f}%)")
    if args.metrics_json is not None:
        lesson1.write_json(args.metrics_json, {
            "images_per_sec": images / seconds, "train_seconds": seconds,
            "epoch_seconds": epoch_seconds, "epoch_images": epoch_images,
            "epoch_data_wait_seconds": epoch_wait, "data_wait_seconds": data_wait,
            "data_wait_fraction": data_wait / seconds, "steps": steps, "train_images": images,
            "test_accuracy": accuracy, "first_batch_labels": train_loader.labels,
            "settings": {"data": str(args.data), "format": kind, "num_workers": workers,
                         "batch_size": args.batch_size, "image_size": args.image_size, "device": str(device),
                         "amp": args.amp and device.type == "cuda", "channels_last": args.channels_last,
                         "seed": args.seed, "cpus_allowed": lesson1.usable_cpus()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
