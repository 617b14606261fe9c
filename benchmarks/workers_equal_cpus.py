"""Backs docs/results.md, "More loader workers than CPUs".
Does num_workers = CPUs cost anything against CPUs - 1, on the same CPUs? (the checker's rule)

Why: `jobs check` flags a job whose DataLoader workers fill every CPU, leaving the main process
(training loop, CUDA waits, pin-memory thread) no core of its own (rule `workers-fill-cpus`).
Whether that deserves a warning or only a note depends on what it costs, measured here.

For each CPU count C, the process pins itself to C cores (`os.sched_setaffinity`, which the
DataLoader's workers inherit, as in a Slurm job's cpuset) and trains lesson 1's model on the GPU
for a fixed time with two loaders:

* `lesson1`: mnist_classify.py's own DataLoader (torchvision MNIST, ToTensor + Normalize,
  pinned memory, persistent workers, batch 64), on its generated digits;
* `heavy`: the same samples with a CPU-heavy augmentation (a random affine warp and a blur at
  4x resolution, several times the cost per sample of lesson 1's MNIST loader).

with num_workers = C and C - 1, twice each in alternating order (the spread of the two repeats is
the noise). Images per second are counted after a warm-up. One process runs every setting, so
start-up is paid once. On the H100 node from the repository root (about 3 minutes):

    PYTHONUNBUFFERED=1 PYTHONPATH=$PWD python3 benchmarks/workers_equal_cpus.py --out-dir "$OUT"

A quick check on a CPU machine: --device cpu --cpus 1,2 --seconds 1 --warmup 3 --samples 2000.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

import mnist_classify


class HeavyAugment(Dataset):
    """Lesson 1's MNIST samples plus a CPU-heavy random warp and blur (as in strong augmentation)."""

    def __init__(self, base: Dataset) -> None:
        self.base = base
        self.blur = torch.full((1, 1, 7, 7), 1 / 49)

    def __len__(self) -> int:
        return len(self.base)  # type: ignore[arg-type]

    def __getitem__(self, i: int):
        x, y = self.base[i]
        big = F.interpolate(x[None], scale_factor=4, mode="bilinear", align_corners=False)
        angle = torch.empty(1).uniform_(-0.3, 0.3)
        theta = torch.tensor([[torch.cos(angle), -torch.sin(angle), 0.0], [torch.sin(angle), torch.cos(angle), 0.0]])
        grid = F.affine_grid(theta[None], list(big.shape), align_corners=False)
        for _ in range(3):
            big = F.conv2d(F.grid_sample(big, grid, align_corners=False), self.blur, padding=3)
        return F.interpolate(big, size=28, mode="area")[0], y


def throughput(loader_name: str, train_ds: Dataset, cpus: int, workers: int, device: torch.device,
               seconds: float, warmup: int) -> float:
    """Images per second of lesson 1's training step fed by this loader, on `cpus` cores."""
    os.sched_setaffinity(0, set(range(cpus)))
    torch.set_num_threads(cpus)
    args = mnist_classify.parse_args(["--synthetic", "--num-workers", str(workers), "--persistent-workers"])
    dataset = HeavyAugment(train_ds) if loader_name == "heavy" else train_ds
    loader, _ = mnist_classify.make_loaders(args, dataset, dataset, device)
    torch.manual_seed(0)
    model = mnist_classify.Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    images, start, batches = 0, None, iter(loader)
    while True:
        for step, (data, target) in enumerate(batches):
            data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
            optimizer.zero_grad()
            F.nll_loss(model(data), target).backward()
            optimizer.step()
            if step == warmup and start is None:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start, images = time.perf_counter(), 0
            elif start is not None:
                images += len(data)
                if time.perf_counter() - start >= seconds:
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    rate = images / (time.perf_counter() - start)
                    del batches, loader  # shuts the persistent workers down
                    return rate
        batches = iter(loader)  # a short data set: next epoch, same workers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpus", default="1,2,4,8", help="CPU counts C to compare (workers C against C - 1)")
    p.add_argument("--loaders", default="lesson1,heavy")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per setting")
    p.add_argument("--warmup", type=int, default=20, help="steps before the timing starts")
    p.add_argument("--samples", type=int, default=30000, help="generated digits in the training set")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out-dir", type=Path, default=Path("runs/workers_equal_cpus"))
    args = p.parse_args(argv)
    device = torch.device(args.device)
    available = len(os.sched_getaffinity(0))
    counts = [c for c in (int(x) for x in args.cpus.split(",")) if c <= available]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    partial = args.out_dir / "workers_equal_cpus.rows.jsonl"  # kept row by row: a cut-off run keeps what it measured
    partial.write_text("")
    with tempfile.TemporaryDirectory() as data_dir:
        setup = mnist_classify.parse_args(["--synthetic", "--data-dir", data_dir, "--train-samples",
                                           str(args.samples), "--test-samples", "100"])
        train_ds, _ = mnist_classify.load_datasets(setup)
        rows = []
        for repeat in range(2):
            for cpus in counts:
                for loader_name in args.loaders.split(","):
                    pair = [cpus, cpus - 1] if repeat == 0 else [cpus - 1, cpus]
                    for workers in pair:
                        rate = throughput(loader_name, train_ds, cpus, workers, device, args.seconds, args.warmup)
                        rows.append({"cpus": cpus, "loader": loader_name, "workers": workers, "repeat": repeat,
                                     "images_per_sec": round(rate, 1)})
                        print(json.dumps(rows[-1]), flush=True)
                        with partial.open("a") as fh:
                            fh.write(json.dumps(rows[-1]) + "\n")
    table = ["| CPUs | loader | workers = CPUs (img/s, 2 runs) | workers = CPUs - 1 (img/s, 2 runs) | "
             "ratio of medians | spread of repeats |", "|---:|---|---|---|---:|---:|"]
    for cpus in counts:
        for loader_name in args.loaders.split(","):
            def rates(workers: int) -> list[float]:
                return [r["images_per_sec"] for r in rows if (r["cpus"], r["loader"], r["workers"])
                        == (cpus, loader_name, workers)]

            same, less = rates(cpus), rates(cpus - 1)
            spread = max(abs(a - b) / max(a, b) for a, b in (same, less))
            table.append(f"| {cpus} | {loader_name} | {same[0]:.0f}, {same[1]:.0f} | {less[0]:.0f}, {less[1]:.0f} | "
                         f"{statistics.median(same) / statistics.median(less):.3f} | {100 * spread:.1f} % |")
    text = "\n".join(table)
    print(text)
    meta = {"host": platform.node(), "cpus_available": available, "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
            "settings": vars(args) | {"out_dir": str(args.out_dir)}, "rows": rows}
    (args.out_dir / "workers_equal_cpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    (args.out_dir / "workers_equal_cpus.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
