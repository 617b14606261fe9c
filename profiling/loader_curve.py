"""Measure the loader curve: the script's own DataLoader timed with k workers on the job's CPUs, each batch held.

Why measure: the profile sees only the main process, so without a curve the workers' speed is inferred from the loop's
wait, with a fudge factor a new machine breaks. Timing the real loader at k = 0, 1, 2, 3, 4, 6, 8, ... workers takes
seconds and no GPU. Each batch is held for the loop's compute before the next is asked for (a paced curve), so the
hand-over to a busy loop is measured; `profiling.curve.choose_workers` turns it into advice.

`run` asks for it through profiling.capture's hook (DLPROF_CURVE) when its run was too short to try worker counts in
its own loop: measured at exit, after kernprof has its numbers, each batch held for the loop's own step. (`profiling
loader`, the same curve without training and held as long as the user said, is retired: the loop is timed instead.)
"""
from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profiling import capture, interrupts
from profiling.cpu_rule import cpus_for_workers, first_cpus, hold_process, job_cpus, workers_for_cpus
from profiling.curve import write_curve
from profiling.records import CurvePoint, LoaderCurve, curve_timing

CURVE_VAR = "DLPROF_CURVE"          # where to write the curve (JSON; the report draws it)
SECONDS_VAR = "DLPROF_CURVE_SECONDS"
SECONDS = 2.0        # per setting, after the first batch (worker start-up is left out)
MAX_BATCHES = 1000   # per setting: a fast loader need not run its whole budget
LADDER = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)  # about x1.5 apart


@dataclass(frozen=True)
class LoaderSpec:
    """What a DataLoader is made of, without its workers: enough to build it again with any k."""

    dataset: Any
    batch_size: int | None
    sampler: Any
    batch_sampler: Any
    collate_fn: Any
    pin_memory: bool
    drop_last: bool
    worker_init_fn: Any
    multiprocessing_context: Any
    where: str = ""
    prefetch_factor: int | None = None  # batches each worker builds ahead (None: torch's default, 2)

    def build(self, workers: int) -> Any:
        from torch.utils.data import DataLoader, IterableDataset

        options: dict[str, Any] = {"num_workers": workers, "collate_fn": self.collate_fn,
                                   "pin_memory": self.pin_memory, "worker_init_fn": self.worker_init_fn}
        if workers > 0:  # (None: torch's defaults; torch refuses both without workers)
            options.update(multiprocessing_context=self.multiprocessing_context, prefetch_factor=self.prefetch_factor)
        if not isinstance(self.dataset, IterableDataset):  # (an IterableDataset takes no sampler)
            if self.batch_size is None:  # its own batch_sampler, or none: each item its sampler yields is a batch
                fed = {"batch_sampler": self.batch_sampler} if self.batch_sampler is not None \
                    else {"sampler": self.sampler, "batch_size": None}  # (as profiling.trials feeds its loaders)
                return DataLoader(self.dataset, **fed, **options)
            options["sampler"] = self.sampler
        return DataLoader(self.dataset, batch_size=self.batch_size, drop_last=self.drop_last, **options)


def spec_of(loader: Any, where: str = "") -> LoaderSpec:
    """The parts of a live DataLoader that decide how fast batches are built."""
    import torch

    return LoaderSpec(loader.dataset, loader.batch_size, loader.sampler, loader.batch_sampler, loader.collate_fn,
                      bool(loader.pin_memory) and torch.cuda.is_available(), loader.drop_last, loader.worker_init_fn,
                      loader.multiprocessing_context, where, loader.prefetch_factor if loader.num_workers > 0 else None)


def worker_ladder(cpus: int, gpus: int, pin_memory: bool | None = None) -> list[int]:
    """k = 0, 1, 2, 3, 4, 6, 8, ... up to the most workers the CPU rule fits in `cpus`, and that most."""
    top = max(workers_for_cpus(cpus, gpus, pin_memory), 1)
    return sorted({k for k in LADDER if k <= top} | {top})


def hold(seconds: float) -> float:
    """Keep the main process busy for `seconds` as a training step does: one core running small torch ops, each
    releasing the GIL (a Python spin would hold the GIL, sleeping would free the core; a GPU loop does neither).
    Returns the overshoot: on a busy core the process can be off the CPU when the time is up."""
    import torch

    end = time.perf_counter() + seconds
    scratch = torch.ones(32, 32)
    while (now := time.perf_counter()) < end:
        scratch = torch.mm(scratch, scratch).clamp_(-1.0, 1.0)
    return now - end


def asleep_seconds() -> float | None:
    """Seconds this thread was neither running nor waiting for a CPU: asleep, which in a loop that only computes and
    asks for batches means waiting for the loader. From Linux's per-thread schedstat; None elsewhere."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as stat:
            ready = int(stat.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None
    return time.perf_counter() - time.thread_time() - ready


def time_loader(spec: LoaderSpec, workers: int, seconds: float = SECONDS,
                max_batches: int = MAX_BATCHES, hold_s: float = 0.0) -> CurvePoint | None:
    """Batches per second with `workers` workers in steady state; None when too few batches come. With `hold_s`, each
    batch is held that long (a late hold made up on the next): the rate such a loop gets, and the main process's sleeps
    for batches (`waited_s`: a hand-over waiting for a CPU, or a slow loader). Start-up is left out (the first batch and
    the k x prefetch_factor built meanwhile put 14 workers 20 % over their pace on an H100) unless it is short."""
    backlog = workers * (spec.prefetch_factor or 2) if workers > 0 else 0
    iterator = iter(spec.build(workers))
    stamps: list[float] = []
    asleep: list[float | None] = []
    late = 0.0  # the last hold's overshoot, taken off the next: the batches are held hold_s each on average
    try:
        for _ in iterator:
            stamps.append(time.perf_counter())
            asleep.append(asleep_seconds() if hold_s > 0 else None)
            timed = len(stamps) - 1 - backlog
            if timed >= max_batches or (timed > 0 and stamps[-1] - stamps[backlog] >= seconds):
                break
            if hold_s > 0:
                late = hold(max(hold_s - late, 0.0))
    finally:
        getattr(iterator, "_shutdown_workers", lambda: None)()
        del iterator
    start = backlog if len(stamps) - 1 - backlog >= 2 else 0
    count, elapsed = len(stamps) - 1 - start, (stamps[-1] - stamps[start]) if stamps else 0.0
    if count <= 0 or elapsed <= 0:
        return None
    first, last = asleep[start], asleep[-1]  # count > 0, so there are stamps
    waited = None if first is None or last is None else round(max(last - first, 0.0), 6)
    return CurvePoint(workers, count, round(elapsed, 6), count / elapsed, waited)


def measure_curve(spec: LoaderSpec, workers: Sequence[int], cpus: int, seconds: float = SECONDS,
                  max_batches: int = MAX_BATCHES, gpus: int = 0, hold_s: float = 0.0) -> LoaderCurve:
    """Time the loader at each k in `workers`, held to the CPUs a job with k workers would ask for, as the sweep is:
    the curve says what `--cpus-per-task` for k delivers, not the node. `hold_s` > 0 paces it (see `time_loader`)."""
    points = []
    mask = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        for k in workers:
            if mask is not None:  # the workers fork from here, so they inherit the share
                hold_process(first_cpus(cpus_for_workers(k, gpus, spec.pin_memory), mask))
            if (point := time_loader(spec, k, seconds, max_batches, hold_s)) is not None:
                points.append(point)
                print(f"loader curve: num_workers={k}: {point.batches_per_s:.1f} batches/s "
                      f"({point.batches} batches in {point.seconds:.2f} s)", file=sys.stderr, flush=True)
    finally:
        if mask is not None:
            hold_process(mask)
    return LoaderCurve(tuple(points), cpus, spec.batch_size, spec.pin_memory, spec.where, round(hold_s * 1e3, 3))


class _CurveHook:
    """Keeps the spec of each loader capture records, and measures the busiest one at exit."""

    def __init__(self, path: Path, seconds: float) -> None:
        self.path, self.seconds = path, seconds
        self.specs: list[tuple[dict, LoaderSpec]] = []
        self.capture: capture.Capture | None = None

    def install(self) -> None:
        record = capture.Capture.record

        def recording(cap: capture.Capture, loader: Any) -> dict:
            entry = record(cap, loader)
            self.capture = cap
            if entry["epochs"] == 1 and all(e is not entry for e, _ in self.specs):
                self.specs.append((entry, spec_of(loader, entry.get("built_at", ""))))
            return entry

        capture.Capture.record = recording  # type: ignore[method-assign]
        atexit.register(self.measure)  # after capture's writer (last in, first out): its record stays the script's
        interrupts.install()  # a no-op when capture installed it

    def measure(self) -> None:
        if interrupts.seen:  # Ctrl-C: the user wants out, not a measurement
            print("loader curve: not measured: the run was interrupted", file=sys.stderr)
            return
        if not self.specs or self.capture is None:
            print("loader curve: the script iterated no DataLoader, so there is nothing to measure", file=sys.stderr)
            return
        cap = self.capture
        tried = cap.trials.record()["status"] if cap.trials is not None else None
        if tried in ("tried", "compute-bound"):  # measured in the run itself: no fallback needed
            print(f"loader curve: not needed: the run's own loop was timed untraced ({tried})", file=sys.stderr)
            return
        seen, cap.max_batches, cap.set_workers = len(cap.loaders), None, None  # our loaders are not the script's
        # the training loader: whose loop took longest (an eval loader may give more, smaller ones), then most batches
        entry, spec = max(self.specs, key=lambda pair: (pair[0].get("loop_seconds") or 0.0,
                                                        pair[0].get("batches") or 0))
        if (step := capture.loop_step(entry)) is None:
            print(f"loader curve: the loop ran {entry.get('loop_steps') or 0} timed step(s), too few to pace "
                  "the curve by; no curve measured", file=sys.stderr)
            return
        print(f"loader curve: the loop computed for {1e3 * step.compute_s:.2f} ms per batch ({step.steps} steps "
              "timed): each batch is held that long", file=sys.stderr)
        if (hold_ms := round(1e3 * step.compute_s, 3)) <= 0:  # each batch is held for the loop's compute per batch
            return
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        cpus = job_cpus() or 1
        print(f"loader curve: the DataLoader built at {spec.where}, {curve_timing(hold_ms)}, {self.seconds:g} s "
              f"per setting, on {cpus} CPU(s)", file=sys.stderr, flush=True)
        # torch's exit hook (registered on the script's import, so it ran first) marked the interpreter as exiting;
        # then _shutdown_workers does nothing and a later iterator at the same address fails in _set_worker_pids.
        from torch.utils.data import _utils as loader_utils

        exiting, loader_utils.python_exit_status = loader_utils.python_exit_status, False
        try:
            curve = measure_curve(spec, worker_ladder(cpus, gpus, spec.pin_memory), cpus, self.seconds, gpus=gpus,
                                  hold_s=hold_ms / 1e3)
            print(f"loader curve: wrote {write_curve(curve, self.path)}", file=sys.stderr)
        except Exception as err:  # the script's run is done; a failed extra measurement must not hide it
            print(f"loader curve: not measured: {type(err).__name__}: {err}", file=sys.stderr)
        finally:
            loader_utils.python_exit_status = exiting
            del cap.loaders[seen:]


def install() -> bool:
    """Measure the loader curve at exit when DLPROF_CURVE names a file (needs capture installed too)."""
    if not os.environ.get(CURVE_VAR) or not os.environ.get(capture.PATH_VAR):
        return False
    _CurveHook(Path(os.environ[CURVE_VAR]), float(os.environ.get(SECONDS_VAR) or SECONDS)).install()
    return True
