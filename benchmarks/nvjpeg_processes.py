"""Does GPU JPEG decoding scale with decoding processes? (docs/small-files.md, issue 36)

torchvision decodes a batch with nvJPEG behind one lock per process. In lesson 09 (many small files)
the GPU path topped out near 12,500 images/s on an H100, below what its ResNet-18 step consumes
(~18,700): is one decoding process the limit? This starts
1, 2 and 4 processes that each decode the same batches of the lesson's JPEGs on the one GPU
(`decode_jpeg(list, device="cuda")`, decode only), released together after a warm-up, and reports
their summed images/s over the same window.

    python benchmarks/nvjpeg_processes.py --processes 1,2,4 --seconds 6
"""
from __future__ import annotations

import argparse
import json
import time

import torch
import torch.multiprocessing as mp
from torchvision.io import decode_jpeg

from small_files.generate import image_bytes


def decoder(rank: int, batch: int, seconds: float, barrier, results) -> None:
    jpegs = [torch.frombuffer(bytearray(image_bytes(0, i, i % 10, 160)), dtype=torch.uint8) for i in range(batch)]
    for _ in range(3):  # warm-up: CUDA context, nvJPEG handles
        decode_jpeg(jpegs, device="cuda")
    torch.cuda.synchronize()
    barrier.wait()
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        decode_jpeg(jpegs, device="cuda")
        done += batch
    torch.cuda.synchronize()
    results[rank] = done / (time.perf_counter() - start)


def counts(text: str) -> list[int]:
    try:
        values = [int(k) for k in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected counts like 1,2,4, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected counts >= 1, got {text!r}")
    return values


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", type=counts, default="1,2,4", help="process counts to try (default 1,2,4)")
    p.add_argument("--batch", type=int, default=256, help="JPEGs per decode call (default 256)")
    p.add_argument("--seconds", type=float, default=6.0, help="timed window per count (default 6)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        p.exit(2, "nvjpeg_processes: needs a CUDA GPU (none found)\n")
    ctx = mp.get_context("spawn")
    for n in args.processes:
        barrier, results = ctx.Barrier(n), ctx.Manager().dict()
        procs = [ctx.Process(target=decoder, args=(r, args.batch, args.seconds, barrier, results)) for r in range(n)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
        rates = [results.get(r, 0.0) for r in range(n)]
        print(json.dumps({"processes": n, "images_per_sec": round(sum(rates)), "each": [round(r) for r in rates],
                          "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}), flush=True)


if __name__ == "__main__":
    main()
