"""Where does lesson 09's (many small files) `--decode gpu` path lose the GPU? (docs/small-files.md, issue 36)

The lesson's ResNet-18 step, fed by GpuBatches from batches already packed in memory (no workers,
no disk), so that only the GPU side is measured: nvJPEG, the crop, the helper thread and the step.
Each row gives images/s and GPU busy (NVML every 10 ms over the timed steps only).

    python benchmarks/gpu_decode_pipeline.py --steps 150 --out results.jsonl
"""
from __future__ import annotations

import argparse
import faulthandler
import itertools
import json
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import torch

from digits.graphed_step import GraphedStep
from small_files import gpu_batch
from small_files.generate import image_bytes
from small_files.train import resnet18


class Busy:
    """Mean NVML utilisation of GPU 0 while the block runs, sampled every `every` seconds.

    Not profiling.sampling.Sampler: it also walks /proc for the CPU use of the process tree at each
    sample, in this process, beside the helper thread whose speed is being measured."""

    def __init__(self, every: float = 0.01) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nvml, self.handle, self.every = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0), every
        self.samples: list[int] = []

    def __enter__(self) -> "Busy":
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def _loop(self) -> None:
        while not self.stop.wait(self.every):
            self.samples.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    @property
    def pct(self) -> float:
        return sum(self.samples) / max(len(self.samples), 1)


def _jpegs(span: tuple[int, int]) -> list[bytes]:
    return [image_bytes(0, i, i % 10, 160) for i in range(*span)]


def packed_batches(batches: int, size: int, shares: set[float]) -> dict[float, list[gpu_batch.Packed]]:
    """Batches as the loader's workers hand them over, for each share of nvJPEG's images.
    The JPEGs are made in a pool before CUDA starts (a fork after it can hang); the packing here."""
    with ProcessPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        chunks = list(pool.map(_jpegs, [(b * size, (b + 1) * size) for b in range(batches)]))
    labels = [i % 10 for i in range(size)]
    return {share: [gpu_batch.pack(c, labels, share) for c in chunks] for share in shares}


def pinned(batches: list[gpu_batch.Packed]) -> list[gpu_batch.Packed]:
    """As the loader's pin_memory thread hands them over."""
    return [tuple(t.pin_memory() if isinstance(t, torch.Tensor) else [d.pin_memory() for d in t]  # type: ignore
                  for t in q) for q in batches]


SIMPLE_RUNS = ("step", "decode", "prepare")
PIPELINE_OPTIONS = ("share", "pin", "ahead")  # nvJPEG's share of each batch, pinned batches, batches made ahead


def options(variant: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in variant.split(":")[1:])


def run_list(text: str) -> list[str]:
    """--runs: step, decode, prepare, and pipeline[:share=F][:pin=0|1][:ahead=N], comma-separated."""
    runs = text.split(",")
    for run in runs:
        if run in SIMPLE_RUNS:
            continue
        try:
            opts = options(run) if run.split(":")[0] == "pipeline" else None
            if opts is None or not set(opts) <= set(PIPELINE_OPTIONS):
                raise ValueError
            float(opts.get("share", 1)), int(opts.get("pin", 0)), int(opts.get("ahead", 2))
        except ValueError:
            raise argparse.ArgumentTypeError(f"unknown run {run!r}: expected step, decode, prepare or "
                                             "pipeline[:share=F][:pin=0|1][:ahead=N]") from None
    return runs


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def timed(name: str, steps: int, size: int, work, **extra) -> dict:
    torch.cuda.synchronize()
    with Busy() as busy:
        t0 = time.perf_counter()
        work()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    row = {"run": name, "images_per_s": round(steps * size / seconds), "gpu_busy_pct": round(busy.pct, 1),
           "samples": len(busy.samples), **extra}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=positive, default=40, help="distinct packed batches, cycled")
    p.add_argument("--batch-size", type=positive, default=256)
    p.add_argument("--steps", type=positive, default=150)
    p.add_argument("--runs", type=run_list, default="step,decode,prepare,pipeline",
                   help="comma-separated: step, decode, prepare, pipeline[:share=F][:pin=0|1][:ahead=N]")
    p.add_argument("--out", default=None)
    p.add_argument("--trace", default=None, help="also write torch.profiler's table of 30 pipeline steps here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        p.exit(2, "gpu_decode_pipeline: needs a CUDA GPU (none found)\n")
    faulthandler.dump_traceback_later(170, exit=True)  # a hang shows where, inside a device call's limit
    runs = args.runs
    shares = {1.0} | {float(options(r).get("share", 1.0)) for r in runs if r.startswith("pipeline")}
    made = packed_batches(args.batches, args.batch_size, shares)
    device = torch.device("cuda")
    packed = made[1.0]
    net = resnet18(10).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=torch.tensor(0.01, device=device), momentum=0.9, fused=True)
    step = GraphedStep(net, opt, amp=True)
    gpu = gpu_batch.GpuBatches(packed, device, 128, seed=0, memory_format=torch.channels_last)
    gpu.warm_up(args.batch_size)
    x, y = gpu.batch(packed[0])
    y = y.to(device)
    for _ in range(6):
        step(x, y)
    rows, n, size = [], args.steps, args.batch_size

    def cycle(k: int, batches: list[gpu_batch.Packed] = packed) -> list[gpu_batch.Packed]:
        return list(itertools.islice(itertools.cycle(batches), k))

    if "step" in runs:
        rows.append(timed("step alone", n, size, lambda: [step(x, y) for _ in range(n)]))
    if "decode" in runs:
        rows.append(timed("decode alone", n, size,
                          lambda: [gpu_batch.decode(q[0], q[1], device) for q in cycle(n)]))
    if "prepare" in runs:
        rows.append(timed("decode + augment", n, size, lambda: [gpu.batch(q) for q in cycle(n)]))
    pins: dict[float, list[gpu_batch.Packed]] = {}
    for variant in [r for r in runs if r.startswith("pipeline")]:
        opts = options(variant)
        share, pin = float(opts.pop("share", 1.0)), bool(int(opts.pop("pin", 0)))
        if pin and share not in pins:
            pins[share] = pinned(made[share])
        source = cycle(n, pins[share] if pin else made[share])
        feed = gpu_batch.GpuBatches(source, device, 128, seed=0, memory_format=torch.channels_last,
                                    **{k: int(v) for k, v in opts.items()})

        def train(feed=feed) -> None:
            for data, target in feed:
                step(data, target.to(device, non_blocking=True))

        rows.append(timed(variant, n, size, train, loader_wait_s=round(feed.loader_wait, 3),
                          prepare_s=round(feed.prepare, 3)))
    if args.trace:
        from torch.profiler import ProfilerActivity, profile
        feed = gpu_batch.GpuBatches(cycle(30), device, 128, seed=0, memory_format=torch.channels_last)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for data, target in feed:
                step(data, target.to(device, non_blocking=True))
            torch.cuda.synchronize()
        with open(args.trace, "w") as fh:
            for key in ("self_cuda_time_total", "self_cpu_time_total"):
                fh.write(prof.key_averages().table(sort_by=key, row_limit=30) + "\n")
    rows.append({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cpus": os.cpu_count()})
    if args.out:
        with open(args.out, "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main()
