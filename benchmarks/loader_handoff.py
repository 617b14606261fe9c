"""Measure the main process's wait per batch when DataLoader workers are far ahead of it.

Why: `profiling/advice.py` treats a wait of up to HANDOFF_MS per batch (with workers) as the cost
of taking a finished batch from the workers (the result queue, then the pin-memory thread), not
as starvation. This script measures that floor on real hardware, so the constant can be checked.
Each setting uses a cheap in-memory dataset with MNIST-shaped batches. The "step" is a sleep much
longer than any worker needs, so the workers are never the limit, and the `next()` time that
remains is pure hand-over.

Run on a GPU node from the repository root (about a minute):

    python benchmarks/loader_handoff.py --out runs/loader_handoff.json

It prints a table (median and 90th percentile of the wait per batch, in ms) and writes JSON.
Compare the medians with `HANDOFF_MS` in profiling/advice.py.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

from profiling.advice import HANDOFF_MS


def measure(workers: int, batch_size: int, pin: bool, steps: int, step_s: float, device: torch.device) -> dict:
    images = torch.randn(batch_size * (steps + 20), 1, 28, 28)
    labels = torch.randint(0, 10, (len(images),))
    loader = DataLoader(TensorDataset(images, labels), batch_size=batch_size, num_workers=workers,
                        pin_memory=pin, persistent_workers=workers > 0, prefetch_factor=4 if workers else None)
    batches = iter(loader)
    for _ in range(10):  # start the workers and fill their queues before timing
        next(batches)
    time.sleep(0.5)
    waits = []
    for _ in range(steps):
        start = time.perf_counter()
        data, target = next(batches)
        waits.append(time.perf_counter() - start)
        data.to(device, non_blocking=pin)
        target.to(device, non_blocking=pin)
        if device.type == "cuda":
            torch.cuda.synchronize()
        time.sleep(step_s)  # the "step": far longer than a worker needs for one batch
    waits_ms = sorted(1e3 * w for w in waits)
    return {"workers": workers, "batch_size": batch_size, "pin_memory": pin,
            "median_ms": statistics.median(waits_ms), "p90_ms": waits_ms[int(0.9 * len(waits_ms))]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--batch-sizes", default="64,256,1024")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--step-ms", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("runs/loader_handoff.json"))
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pins = (False, True) if device.type == "cuda" else (False,)
    rows = [measure(w, b, pin, args.steps, args.step_ms / 1e3, device)
            for w in map(int, args.workers.split(",")) for b in map(int, args.batch_sizes.split(","))
            for pin in pins]
    print(f"device: {torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}; "
          f"HANDOFF_MS in the advice = {HANDOFF_MS}")
    print(f"{'workers':>7} {'batch':>6} {'pin':>5} {'median ms':>10} {'p90 ms':>8}")
    for r in rows:
        print(f"{r['workers']:>7} {r['batch_size']:>6} {str(r['pin_memory']):>5} "
              f"{r['median_ms']:>10.3f} {r['p90_ms']:>8.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"device": str(device), "handoff_ms_constant": HANDOFF_MS, "rows": rows}, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
