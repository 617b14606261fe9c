"""Trace a little, then time the real loop untraced, trying worker counts in the script's own DataLoader.

Why: a traced step is longer than the real one, and workers deliver less beside a real loop than alone, so the loop
itself is timed (docs/profiling-model.md says how). Each epoch's batches are drawn once from the training loader's
sampler and the global RNG advances as one iterator's would: only which worker builds a batch (and so per-worker
augmentation seeds) changes. An IterableDataset is not tried (said so).
"""
from __future__ import annotations

import math
import os
import statistics
import sys
import warnings
import weakref
from typing import Any

from profiling.cpu_rule import cpus_for_workers, first_cpus, hold_process
from profiling.segments import Feed, Segmented
from profiling.turns import (HANDOFF_MS, IDLE, LOADER_BOUND, MIN_TIMED, MIN_TURN, NO_TIME, STREAM, candidates,
                             mean_steps, out_of_the_running)

TRACE_VAR = "DLPROF_TRACE_BATCHES"     # trace at most this many batches of the training loader
TRY_VAR = "DLPROF_TRY_WORKERS"         # "auto", "off", or worker counts "0,1,2"
SEGMENT_VAR = "DLPROF_SEGMENT_SECONDS"  # timed seconds per segment
TRACE_BATCHES = 500
SEGMENT_SECONDS = 2.0
ROUNDS = 12        # at most this many rounds of turns, while two or more counts are still in the running
STARTS = 2.0  # a turn times at least STARTS x its workers' median start (spawn: about 5 s a start on an H200)
NEAR = 2.0  # a turn within NEAR x of LOADER_BOUND gets a second (H100: a 3-4 % loop's one turn crossed 5 % in 2 of 6)


def as_forked(loader: Any, workers: int, own: int | None) -> Any:
    """The dataset as a plain run at this count would hold it. A file opened lazily by the first item read in the main
    process (`if self.tar is None: self.tar = tarfile.open(...)`) is shared by workers forked after it, who then race
    on one offset: unseen ad_3's tar read garbage, aa_1's SQLite likewise. So workers get a copy in which each such
    handle (None when the DataLoader was built, something to `close()` now) is None again, and they open their own;
    anything else set since (an epoch, a transform) they keep. A 0-worker turn beside a script with workers reads a
    copy, so the script's own workers, forked later, find the dataset as it was."""
    import copy

    inner = innermost(loader.dataset)  # random_split's Subset holds the dataset that opens the file
    opened = [name for name in getattr(loader, "_dlprof_unset", ())
              if callable(getattr(getattr(inner, name, None), "close", None))]
    if (workers > 0 and not opened) or (workers == 0 and not own):
        return loader.dataset
    try:
        twin = node = copy.copy(loader.dataset)
        while node is not innermost(node):
            node.dataset = node = copy.copy(node.dataset)
        for name in opened if workers > 0 else ():
            setattr(node, name, None)
    except Exception:  # a dataset that cannot be copied is read as it is
        return loader.dataset
    return twin


def innermost(dataset: Any) -> Any:
    """The dataset under any `torch.utils.data.Subset`s (random_split's)."""
    from torch.utils.data import Subset

    return innermost(dataset.dataset) if isinstance(dataset, Subset) else dataset


class Trials:
    """The traced part, the untraced timing and the worker trials of one run's training loader."""

    def __init__(self, trace_batches: int = TRACE_BATCHES, segment_s: float = SEGMENT_SECONDS,
                 asked: str = "auto") -> None:
        self.trace_batches, self.segment_s, self.asked = trace_batches, segment_s, asked
        self.entry: dict[str, Any] | None = None  # the training loader's capture entry
        self.tracing, self.traced_batches, self.away, self.graded = True, 0, False, True  # away: a pass left alone
        self.others, self.recorded, self.rebuilt = 0, False, False  # other loaders' batches (and passes left alone)
        self.status = "traced only"  # -> "compute-bound", "tried", or why nothing was tried
        self.own: int | None = None
        self.gpus, self.pin, self.rounds, self.squeezed = 0, False, 0, False  # squeezed: below (held_slower)
        self.settings: list[int] = []  # the counts still in the running
        self.queue: list[int] = []  # the next turns'
        self.timed: dict[int, dict[str, float]] = {}
        self.segments: list[tuple[int, int, float]] = []  # (workers, timed steps, seconds) of each turn
        self.starts: list[float] = []  # seconds from each turn's new workers to its first batch
        self.refused: dict[str, str] = {}  # counts whose DataLoader torch refused, and why
        self.resumes: int | None = None  # the count whose turn the epoch's end cut: its next turn goes on
        self.untraced, self.traced = (dict(NO_TIME) for _ in range(2))
        self.mask: set[int] | None = None  # the job's CPUs, once started
        self.threads: int | None = None  # torch's threads in the script, once started
        self.feed, self.loaders = Feed(), {}  # the DataLoader of the count whose turn it is, fed by one sampler
        self.epoch: Segmented | None = None  # the epoch being served
        self.alive: Any = lambda: True  # the training loader, while the script holds it (a weak reference)

    def stop_tracing(self) -> None:
        """Switch line tracing off for the rest of the run (kernprof still writes what it traced)."""
        profiler = getattr(__import__("builtins"), "profile", None)
        if self.tracing and profiler is not None and hasattr(profiler, "disable") and hasattr(profiler, "enable"):
            profiler.disable()
            profiler.enable = lambda *args, **kwargs: None  # the wrappers' enable_by_count calls it
        self.tracing = False

    def is_training(self, entry: Any, loader: Any = None) -> bool:
        """The first loader iterated, unless before anything is tried it was one pass only and gives way to the next
        iterated with gradients on: one that shuffles where it did not (Lightning's validation check, a statistics pass:
        unseen l_3) or any where it had none (an evaluation: m_4); or, cut short, to one built at its line (warm-up)
        or to any once it is freed (a script's own probe of worker counts: t_4)."""
        first = self.entry
        if first is not None and (entry is first or self.own is not None or first["epochs"] >= 2):
            return entry is first  # chosen for good, or its own batch: every batch's path, no call into torch
        grad = sys.modules["torch"].is_grad_enabled()
        if first is None or grad and (entry.get("shuffles") and not first.get("shuffles") or not self.graded) \
                or first["batches"] < first["epoch_batches"] and not entry.get("batches") \
                and ((entry.get("built_at") or "?") == first.get("built_at") != "?" or self.alive() is None):
            self.entry, self.traced_batches, self.traced, self.graded = entry, 0, dict(NO_TIME), grad
            self.alive = weakref.ref(loader) if loader is not None else lambda: True
        return entry is self.entry

    def batch(self, entry: Any, step_s: float | None, wait_s: float | None) -> None:
        """One batch of any loader: count the traced ones, time the untraced ones of the training loader."""
        if not self.is_training(entry) or self.away:
            self.others += not self.recorded  # another loader's (a new one each epoch: b_s5b), not the exit's curve
            return
        if step_s is not None and wait_s is not None:
            self.add(self.traced if self.tracing else self.untraced, step_s, wait_s)
        if self.tracing and self.traced_batches >= min(self.trace_batches, entry.get("epoch_batches") or math.inf):
            self.stop_tracing()  # the next batch after the last traced step: an epoch at most, on one iterator too
        elif self.tracing:  # (timm's MultiEpochsDataLoader: o_2); each traced batch's step is traced whole
            self.traced_batches += 1

    @staticmethod
    def add(into: dict[str, float], step_s: float, wait_s: float) -> None:
        into.update(steps=into["steps"] + 1, seconds=into["seconds"] + step_s,
                    wait_seconds=into["wait_seconds"] + wait_s, squares=into.get("squares", 0.0) + step_s * step_s)

    def iterator(self, loader: Any, entry: Any, make: Any, where: str = "?", function: str = "?") -> Any:
        """The iterator for a new epoch: the script's own while tracing, else the segmented one. A first pass cut short
        at another line (a peek, an LR finder: unseen l_4), or a whole one in another function with gradients on (a
        distilling teacher's warm-up before its student's loop: x_2), was not the loop: the traced part starts again
        here (a step-based loop's own `it = iter(loader)` after the first is the same loop). A pass at another line
        without gradients (accuracy over the training set: l_1; not the loop under `no_grad`: m_1) is served untimed."""
        if not self.is_training(entry, loader):  # the same line's loader, shuffled alike, grad on, after an epoch:
            first, grad = self.entry, sys.modules["torch"].is_grad_enabled()  # built anew each epoch (unseen r_4)
            if self.tracing and grad and first.get("built_at") != "?" and first["batches"] >= first["epoch_batches"] \
                    and all(entry.get(k) == first.get(k) for k in ("built_at", "shuffles", "dataset")):
                self.rebuilt = True
                self.stop_tracing()
            return make(loader)
        short = entry["batches"] < min(entry["epoch_batches"], self.trace_batches)
        elsewhere = function != entry.get("iterated_in", function) and sys.modules["torch"].is_grad_enabled()
        if self.tracing and where not in ("?", entry["iterated_at"]) and entry["epochs"] == 2 and (short or elsewhere):
            entry["iterated_at"], entry["epochs"], self.traced_batches, self.traced = where, 1, 0, dict(NO_TIME)
            entry["iterated_in"] = function
        if self.tracing and entry.get("epochs", 1) > 1:  # the traced part is one epoch at most
            self.stop_tracing()
        self.away = where not in ("?", entry["iterated_at"]) and not sys.modules["torch"].is_grad_enabled()
        if self.tracing or self.away or self.status not in ("traced only", "trying"):
            return make(loader)
        if self.own is None:
            stream = isinstance(loader.dataset, sys.modules["torch"].utils.data.IterableDataset)
            if stream or self.asked == "off":
                self.status = STREAM if stream else "worker counts not tried: switched off (--try-workers off)"
                return make(loader)
            self.start(loader)
        return make(loader) if self.settings == [self.own] else Segmented(self, loader, make)  # one: never restarted

    def start(self, loader: Any) -> None:
        import torch

        self.own = loader.num_workers
        self.gpus = 1 if torch.cuda.is_available() else 0
        self.pin = bool(loader.pin_memory) and self.gpus > 0
        self.mask = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        self.threads = torch.get_num_threads()
        idle = self.traced["wait_seconds"] >= IDLE * self.traced["seconds"] > 0  # a main process with a CPU to spare
        self.settings = candidates(self.own, len(self.mask or ()) or 1, self.gpus, self.pin, self.asked, idle)
        self.queue = [self.own]  # the baseline: does the loader hold the loop back?

    def next_setting(self) -> int | None:
        """The worker count of the next segment; None once the trials are over (the script's own, then)."""
        if not self.queue and self.status in ("traced only", "trying"):
            self.end_round()
        return self.queue.pop(0) if self.queue else None

    def end_round(self) -> None:
        steps = mean_steps(self.timed)
        if self.status == "traced only":  # the baseline segment just ended
            base = self.timed.get(self.own or 0)
            if base is None or base["steps"] < MIN_TIMED:
                self.queue = [self.own or 0]  # too short to say: time it again
                return
            share, self.squeezed = base["wait_seconds"] / base["seconds"], self.held_slower(base)
            if not self.squeezed and LOADER_BOUND / NEAR <= share < NEAR * LOADER_BOUND and len(self.segments) < 2:
                self.queue = [self.own or 0]  # near the line, either side, after one turn: decide on two (j_5: 4.4 %)
                return
            self.status = "compute-bound" if self.keeps_up(base) else "trying"
            if self.status == "compute-bound":
                return self.release()
        else:
            self.rounds += 1
            if self.rounds < ROUNDS and all(k in steps for k in self.settings):
                out = out_of_the_running({k: steps[k] for k in self.settings}, self.segments)
                self.drop(out)
                self.settings = [k for k in self.settings if k not in out]
            if self.rounds >= ROUNDS or len(self.settings) < 2:  # or one count left: the fastest, nothing to part
                self.status = "tried"
                return self.release()
        turn = self.rounds % len(self.settings)  # each round starts one count later
        self.queue = self.settings[turn:] + self.settings[:turn]

    def keeps_up(self, base: dict[str, float]) -> bool:
        """The loader keeps up: the loop waited under LOADER_BOUND of its steps, or only a worker's hand-over."""
        handoff = bool(self.own) and 1e3 * base["wait_seconds"] / base["steps"] <= HANDOFF_MS  # a hand-over at most
        return (base["wait_seconds"] < LOADER_BOUND * base["seconds"] or handoff) and not self.squeezed

    def add_segment(self, workers: int, steps: int, seconds: float, cut: bool) -> None:
        """Record one turn's timed batches. A turn cut by an epoch's end goes on in the next: both parts are one
        segment, or the spread of turns and the one-turn rule would count it twice."""
        last = self.segments[-1] if self.segments else None
        goes_on = self.resumes == workers and last is not None and last[0] == workers
        if goes_on:
            self.segments[-1] = (workers, last[1] + steps, round(last[2] + seconds, 6))
        elif steps:
            self.segments.append((workers, steps, round(seconds, 6)))
        self.resumes = workers if cut and (goes_on or steps) else None

    def held_slower(self, base: dict[str, float]) -> bool:
        """Held to its count's CPUs, did the baseline compute slower than the traced part on all the job's? Tracing
        only lengthens a step, so the step needs CPUs: try other counts (H100 cpu_mixup: 64 ms held to 4 CPUs, 44
        traced on 16; kept at 2 workers, 73 % of 4's speed). GPU only: a CPU model's step always needs CPUs."""
        held_cpus = cpus_for_workers(self.own or 0, self.gpus, self.pin)
        if not self.gpus or not self.mask or held_cpus >= len(self.mask) or self.traced["steps"] < MIN_TIMED:
            return False
        traced = (self.traced["seconds"] - self.traced["wait_seconds"]) / self.traced["steps"]
        return (base["seconds"] - base["wait_seconds"]) / base["steps"] > traced

    def hold(self, workers: int | None) -> None:
        """Hold every thread (and forked worker) to the CPUs a job with `workers` would ask for, torch's threads to no
        more than those nor the script's own: holding the main thread alone, cpu_mixup stepped 56 ms on an H100
        where `taskset` to those CPUs gave at most 46."""
        if self.mask is None:  # never started (nothing tried): nothing to hold, and no torch to import at exit
            return
        import torch

        cpus = self.mask if workers is None else first_cpus(cpus_for_workers(workers, self.gpus, self.pin), self.mask)
        hold_process(cpus)
        # torch warns of any loader with more workers than the CPUs held: the kit's doing, not the script's (ad_4)
        warnings.filterwarnings("ignore", "This DataLoader will create", UserWarning)
        own = self.threads or len(cpus)
        torch.set_num_threads(own if workers is None else min(own, len(cpus)))

    def loader_for(self, workers: int, loader: Any) -> Any:
        """The DataLoader of one count: the script's dataset and options, the shared feed. Only this count's workers
        live, as in a job of its own: with every count's kept, an H200 put 4-8 workers 7-15 % behind 12, separate
        processes 0-3 % (docs/results/issue34-h200-08f6). One going on past an epoch's end keeps them (Segmented)."""
        import torch

        self.drop([k for k in self.loaders if k != workers])
        if workers not in self.loaders:
            options: dict[str, Any] = {"num_workers": workers, "collate_fn": loader.collate_fn,
                                       "pin_memory": loader.pin_memory, "worker_init_fn": loader.worker_init_fn}
            if workers > 0:  # torch refuses these without workers (unseen z_6: `timeout=30` crashed the 0 turn)
                options.update(multiprocessing_context=loader.multiprocessing_context, persistent_workers=True,
                               prefetch_factor=loader.prefetch_factor or 2, timeout=loader.timeout,
                               in_order=getattr(loader, "in_order", True))  # in_order=False, as the script's (ac_4)
            # the turn's workers draw their seeds from a generator of its own: the script's RNG stays where it was
            seeds = torch.Generator().manual_seed((torch.initial_seed() + len(self.segments)) % 2**64)
            # without automatic batching (batch_size=None) each item the sampler yields is a batch already (unseen k_4)
            fed = {"batch_sampler": self.feed} if loader._auto_collation else {"sampler": self.feed, "batch_size": None}
            dataset = as_forked(loader, workers, self.own)
            self.loaders[workers] = torch.utils.data.DataLoader(dataset, generator=seeds, **fed, **options)
        return self.loaders[workers]

    def drop(self, counts: Any) -> None:
        """Stop the workers of counts no longer tried (torch keeps a persistent loader's iterator)."""
        for k in list(counts):
            iterator = getattr(self.loaders.pop(k, None), "_iterator", None)
            if iterator is not None:
                iterator._shutdown_workers()

    def refuse(self, workers: int, error: Exception) -> None:
        """Drop a count whose DataLoader torch refused (unseen z_6) or whose workers failed at a batch (one killed for
        memory): the training goes on without it, and so do its timings, since a count that cannot run is no advice."""
        said = str(error).strip().splitlines() or [""]  # a worker's error: torch's wrapper, whose last line names it
        self.refused[str(workers)] = said[-1] if len(said) > 1 else f"{type(error).__name__}: {said[0]}"
        self.settings, self.queue = [k for k in self.settings if k != workers], [k for k in self.queue if k != workers]
        self.timed.pop(workers, None)
        self.segments = [turn for turn in self.segments if turn[0] != workers]
        self.drop([workers])

    def release(self) -> None:
        self.queue = []
        self.drop(self.loaders)
        self.hold(None)

    def turn_s(self) -> float:
        """The least timed seconds of a turn: --segment-seconds, or more where starting workers costs more."""
        return max(self.segment_s, STARTS * statistics.median(self.starts)) if self.starts else self.segment_s

    def record(self) -> dict[str, Any]:
        """What was traced, timed and tried, for `<stem>.loaders.json` (the report reads it)."""
        if self.epoch is not None:  # the run ended in a turn: its steps are a turn too (r_2 read "0 turn(s)")
            self.epoch.end_turn()
        self.release()
        if self.settings == [self.own] and self.status == "traced only" and self.untraced["steps"] >= MIN_TIMED:
            # the one count the CPUs hold, timed in the script's own loader: restarting its workers in turns added
            # their starts to its step and changed the losses of per-worker random augmentation (unseen k_1)
            whole = self.untraced
            self.timed, self.segments = {self.own: whole}, [(self.own, whole["steps"], whole["seconds"])]
            self.status = "compute-bound" if self.keeps_up(whole) else "tried"
        if self.status == "compute-bound" and self.untraced["steps"] >= MIN_TIMED and not self.keeps_up(self.untraced):
            self.status = "worker counts not tried: its first turns kept up, but the whole run waited 5 % or more"
        entry = self.entry or {}  # one iterator over many epochs: nothing can be tried, its whole run was timed
        if self.status == "traced only" and entry.get("epochs") == 1 and entry["batches"] > entry["epoch_batches"] > 0:
            kept_up = self.untraced["steps"] >= MIN_TIMED and self.keeps_up(self.untraced)
            self.status = "compute-bound" if kept_up else ("worker counts not tried: its one iterator gave more than "
                                                           "an epoch (a loader that repeats its sampler), and counts "
                                                           "change at a new one")
        if self.status == "traced only" and self.untraced["seconds"] >= MIN_TURN * self.segment_s:  # a turn's worth
            self.end_round()  # the run ended after its own count's first turn (of an epoch too short to end it)
        if self.status == "trying":  # the run ended inside the trials
            complete = set(self.settings) <= set(mean_steps(self.timed))  # each count timed at least once
            self.status = "tried" if complete else ("too short to try worker counts: its DataLoader's epochs ended "
                                                    "before each was timed")  # (a run may go on with others: ac_3)
        elif self.status == "traced only" and self.rebuilt:
            self.status = "worker counts not tried: its DataLoader is built anew every epoch (see the notes)"
        elif self.status == "traced only":
            self.status = "too short to try worker counts: the run ended " + (
                "while timing its own worker count, before others" if self.timed else "in its loader's first epoch "
                "(counts are tried from its second)" if self.untraced["steps"] else "within the traced part")
        turn_s, self.recorded = self.turn_s(), True  # (the loader curve at exit records first, then iterates)
        return {"status": self.status, "loader": {k: entry.get(k) for k in ("built_at", "iterated_at")},
                "traced_batches": self.traced_batches, "trace_limit": self.trace_batches, "other_batches": self.others,
                "own_workers": self.own, "rounds": self.rounds, "segment_seconds": self.segment_s,
                "starts": len(self.starts), "start_seconds": sum(self.starts),  # and a turn's length, if they set it:
                "lengthened_to": turn_s if turn_s > self.segment_s else None, "cpus": len(self.mask or ()) or None,
                "untraced": self.untraced, "traced": self.traced, "squeezed": self.squeezed, "refused": self.refused,
                "settings": {str(k): t for k, t in sorted(self.timed.items())}, "segments": self.segments}


def from_environment() -> Trials | None:
    """The trials `run` asked for (DLPROF_TRACE_BATCHES set), else None."""
    return Trials(int(os.environ[TRACE_VAR]), float(os.environ.get(SEGMENT_VAR) or SEGMENT_SECONDS),
                  os.environ.get(TRY_VAR) or "auto") if os.environ.get(TRACE_VAR) else None
