"""The DataLoaders a script really iterates, recorded from inside the profiled process.

Why: a script sets its workers in code, through `-j`, `--workers` or a config file; reading its arguments guesses, and a
guess sent the advice down the wrong branch for a run that used 0. So `torch.utils.data.DataLoader` is wrapped when the
script imports it: every loader it iterates reports its settings and the `file:line` where it was built.

Written as JSON (`DLPROF_LOADERS`, the path; `Capture.write`) when the process exits, Ctrl-C included. Installed by
`profiling.kernprof_entry` (under kernprof) and by `python -m profiling.capture SCRIPT ARGS` (a plain run, for `sweep`).
torch is imported by the script, never by this module.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib.abc
import importlib.util
import inspect
import json
import linecache
import os
import re
import runpy
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from profiling import interrupts
from profiling import trials as trials_module
from profiling.segments import Segmented

PATH_VAR = "DLPROF_LOADERS"         # where to write the record
WORKERS_VAR = "DLPROF_SET_WORKERS"  # num_workers forced on every DataLoader (sweep)
BATCHES_VAR = "DLPROF_MAX_BATCHES"  # stop the script after this many batches of one loader
OWN_VAR = "DLPROF_OWN_MODULES"      # the user's own packages (`run --module`), the script's code even when installed
TARGET = "torch.utils.data.dataloader"
FEW_STEPS = 5  # loop steps the hook must time before its compute per batch is used
INSTALLED = {"site-packages", "dist-packages"}  # installed packages: a framework's code, not the script's
SETTINGS = ("num_workers", "batch_size", "pin_memory", "persistent_workers", "prefetch_factor")


class Capture:
    """The loaders seen so far, and what to do to them; one per process."""

    def __init__(self, path: Path, set_workers: int | None = None, max_batches: int | None = None,
                 trials: trials_module.Trials | None = None, own: str = "") -> None:
        self.path, self.set_workers, self.max_batches, self.trials = path, set_workers, max_batches, trials
        self.loaders: list[dict[str, Any]] = []
        self.stopped_after: int | None = None
        self.waited: dict[str, float] = {}  # seconds waited for batches at each loop line (`iterated_at`), all told
        self.pid = os.getpid()
        tracer = importlib.util.find_spec("line_profiler")  # its wrappers of the script's profiled functions
        self._skip = {os.path.dirname(os.path.abspath(path)) for path in (__file__, tracer and tracer.origin) if path}
        self.own = {name.partition(".")[0] for name in own.split(",") if name}  # `run --module`: OWN_VAR

    def caller(self, loader: Any) -> tuple[str, str, Any]:
        """file:line of the script's own frame, the first outside torch, this module and installed packages (Lightning
        wraps DataLoader.__init__ and iterates in its trainer, both called from the script's lines), else of the first
        outside torch and this module; and of the installed frame the script called (the framework that built it).
        The loader's own methods are passed by: a `DeviceLoader(DataLoader)` is built and iterated where it is used."""
        frame, first, called = sys._getframe(1), None, None  # this module's own frames are skipped below
        while frame is not None:
            name = os.path.abspath(frame.f_code.co_filename)
            skipped = any(name.startswith(skip + os.sep) for skip in self._skip)
            if not skipped and frame.f_locals.get("self") is not loader:
                here = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                mine = str(frame.f_globals.get("__name__")).partition(".")[0] in self.own  # `run --module` code
                if mine or not INSTALLED.intersection(Path(name).parts):
                    return here, called or here, frame
                first, called = first or here, here
            frame = frame.f_back
        return first or "?", first or "?", None

    def iterated(self, loader: Any) -> tuple[str, str]:
        """file:line and function where the script iterates `loader`: a loop's own restart (`it = iter(loader)` in the
        same function) is the same loop, a pass in another function may not be (profiling.trials)."""
        at, _, frame = self.caller(loader)
        return at, frame.f_code.co_name if frame else "?"

    def record(self, loader: Any) -> dict[str, Any]:
        """The loader's entry, made the first time it is iterated."""
        entry = getattr(loader, "_dlprof_entry", None)
        if entry is None:
            length = epoch = None
            with contextlib.suppress(TypeError):  # an IterableDataset (or a sampler) without a length
                length = len(loader.dataset)
                epoch = len(loader)  # its sampler's: a WeightedRandomSampler's num_samples (unseen l_1), drop_last
            built = dict(zip(("built_at", "built_by", "call"), getattr(loader, "_dlprof_built", ("?", None, None))))
            at, function = self.iterated(loader)
            entry = {**built, "iterated_at": at, "iterated_in": function,
                     **{key: getattr(loader, key, None) for key in SETTINGS}, "dataset_length": length,
                     "dataset": type(loader.dataset).__name__, "shuffles": shuffles(loader), "epochs": 0, "batches": 0,
                     "first_batch_s": None, "last_batch_s": None, "epoch_batches": epoch or 0,
                     "loop_steps": 0, "loop_seconds": 0.0, "loop_wait_seconds": 0.0}
            if self.set_workers is not None:
                entry["workers_set_by"] = WORKERS_VAR
            object.__setattr__(loader, "_dlprof_entry", entry)
            self.loaders.append(entry)
        entry["epochs"] += 1
        return entry

    def batch(self, entry: dict[str, Any], iterator: Any, asked: float) -> float:
        """Count one batch the loop `asked` for at `asked`; after `max_batches` of one loader, stop the script (exit 0).
        Also time the step and its wait (each epoch's first batch left out: step - wait is compute): every loader's
        wait at the loop's line since this one's last batch, as `zip(labelled, unlabelled)` waits on both."""
        now, line = time.perf_counter(), entry["iterated_at"]
        self.waited[line] = self.waited.get(line, 0.0) + now - asked
        previous, mark = getattr(iterator, "_dlprof_last", None), getattr(iterator, "_dlprof_mark", 0.0)
        wait = self.waited[line] - mark
        step = None if previous is None else now - previous
        if self.trials is not None:
            self.trials.batch(entry, step, None if step is None else wait)
        if step is not None:
            entry["loop_steps"] += 1
            entry["loop_seconds"] += step
            entry["loop_wait_seconds"] += wait
        object.__setattr__(iterator, "_dlprof_last", now)
        object.__setattr__(iterator, "_dlprof_mark", self.waited[line])
        entry["batches"] += 1
        if entry["first_batch_s"] is None:
            entry["first_batch_s"] = now
        entry["last_batch_s"] = now
        if self.max_batches and entry["batches"] >= self.max_batches:
            self.stopped_after = entry["batches"]
            raise SystemExit(0)
        return wait

    def write(self) -> None:
        if os.getpid() != self.pid:  # a forked worker must not overwrite the parent's record
            return
        record = {"version": 1, "stopped_after": self.stopped_after, "set_workers": self.set_workers,
                  "loaders": self.loaders, "trials": None if self.trials is None else self.trials.record()}
        self.path.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")

    def patch(self, module: Any) -> None:
        """Wrap DataLoader.__init__ (where built, forced workers), __iter__ and the iterators' __next__."""
        loader_class, iter_class = module.DataLoader, module._BaseDataLoaderIter
        self._skip.add(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__)))))
        init, iterate, advance = loader_class.__init__, loader_class.__iter__, iter_class.__next__
        signature = inspect.signature(init)
        capture = self

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            script, called, frame = capture.caller(self)
            by = built_by(script, called)  # None too where the script's line calls an installed loader class (aa_6)
            made = (script, by, call_name(frame, script) if frame and (called == script or by is None) else None)
            object.__setattr__(self, "_dlprof_built", made)
            if capture.set_workers is not None:
                bound = signature.bind(self, *args, **kwargs)
                bound.arguments["num_workers"] = capture.set_workers
                if capture.set_workers == 0:  # torch refuses these without workers
                    bound.arguments.update(persistent_workers=False, prefetch_factor=None)
                args, kwargs = bound.args[1:], bound.kwargs
            init(self, *args, **kwargs)
            fields = getattr(trials_module.innermost(self.dataset), "__dict__", {})  # set later: a lazy file (ad_3)
            object.__setattr__(self, "_dlprof_unset", [name for name, value in fields.items() if value is None])

        def __iter__(self: Any) -> Any:
            entry = capture.record(self)
            if capture.trials is None:
                iterator = interrupts.guarded(iterate, self)
            else:  # the training loader after its traced part: maybe served by other worker counts
                iterator = interrupts.guarded(capture.trials.iterator, self, entry, iterate, *capture.iterated(self))
            if isinstance(iterator, Segmented):
                iterator.after = lambda asked: capture.batch(entry, iterator, asked)
            else:
                object.__setattr__(iterator, "_dlprof_entry", entry)
            object.__setattr__(iterator, "_dlprof_last", None)  # persistent workers reuse the iterator
            return iterator

        def __next__(self: Any) -> Any:
            asked = time.perf_counter()
            item = interrupts.guarded(advance, self)
            if (entry := getattr(self, "_dlprof_entry", None)) is not None:
                capture.batch(entry, self, asked)
            return item

        loader_class.__init__, loader_class.__iter__, iter_class.__next__ = __init__, __iter__, __next__


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Calls `patch(module)` right after the script imports the module `name` (never imports it itself)."""

    def __init__(self, name: str, patch: Callable[[Any], None]) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run_module(module)
            self.patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def on_import(name: str, patch: Callable[[Any], None]) -> None:
    """`patch(module)` now if the module `name` is loaded, else as soon as it is."""
    if name in sys.modules:
        patch(sys.modules[name])
    else:
        sys.meta_path.insert(0, _PatchOnImport(name, patch))


def built_by(script: str, called: str) -> str | None:
    """The installed package that built a loader from a script's line that builds none (HF's `trainer.train()`)."""
    file, _, line = script.rpartition(":")
    if called == script or not line.isdigit() or "Loader" in linecache.getline(file, int(line)):
        return None
    parts = Path(called.rpartition(":")[0]).parts
    return next((parts[i + 1].removesuffix(".py") for i, part in enumerate(parts[:-1]) if part in INSTALLED), None)


def call_name(frame: Any, where: str) -> str | None:
    """How the script's line wrote the call that built a loader (`make_loader` for a functools.partial of DataLoader),
    read at the call's position in the source (Python 3.11+), so that an edit names what the user wrote there."""
    code = frame.f_code
    if f"{code.co_filename}:{frame.f_lineno}" != where or not hasattr(code, "co_positions"):
        return None
    line, _, column, _ = list(code.co_positions())[frame.f_lasti // 2]
    found = re.match(r"[\w.]+(?:\(\)\.[\w.]+|\[[^]]*\])*\s*\(",  # `FACTORIES["train"](...)`: a dict's partial (s_1)
                     linecache.getline(code.co_filename, line or 0)[column or 0:])
    return found.group(0).rstrip("( ") if found else None


def shuffles(loader: Any) -> bool:
    """Does the loader draw a new order each epoch, as training loaders do (a random sampler, a DistributedSampler)?"""
    from torch.utils.data import RandomSampler, SubsetRandomSampler

    sampler = getattr(loader, "sampler", None)
    return isinstance(sampler, (RandomSampler, SubsetRandomSampler)) or getattr(sampler, "shuffle", False) is True


def install() -> Capture | None:
    """Install the hook when `DLPROF_LOADERS` names a file; a no-op otherwise."""
    if not os.environ.get(PATH_VAR):
        return None
    workers, batches = (int(v) if (v := os.environ.get(name, "").strip()).isdigit() else None
                        for name in (WORKERS_VAR, BATCHES_VAR))
    capture = Capture(Path(os.environ[PATH_VAR]), workers, batches, trials_module.from_environment(),
                      os.environ.get(OWN_VAR, ""))
    on_import(TARGET, capture.patch)
    atexit.register(capture.write)
    interrupts.install()
    return capture


def read_record(path: Path) -> dict[str, Any]:
    """The record in `path` ({} when it is missing or unreadable: a bare .lprof)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def read_loaders(path: Path) -> list[dict[str, Any]]:
    """The loaders recorded in `path` ([] when there are none)."""
    return [entry for entry in read_record(path).get("loaders") or [] if isinstance(entry, dict)]


def read_trials(path: Path) -> dict[str, Any]:
    """What `run` traced, timed untraced and tried in the script's own loop (profiling.trials); {} if nothing."""
    trials = read_record(path).get("trials")
    return trials if isinstance(trials, dict) else {}


def loader_for_loop(loaders: Sequence[Mapping[str, Any]], file: str | None = None, line: int | None = None,
                    timed: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
    """The loader a training loop iterates: of those iterated at its header, the one the trials timed (`timed`: where
    it was built and iterated; train and validation may share a line), else the first; with none there, the busiest."""
    if file is not None and line is not None:
        header = f"{os.path.basename(file)}:{line}"  # `iterated_at` there, in any folder
        here = [entry for entry in loaders if os.path.basename(str(entry.get("iterated_at", ""))) == header]
        if here:
            return next((e for e in here if timed and all(e.get(k) == v for k, v in timed.items())), here[0])
    return max(loaders, key=lambda entry: entry.get("batches") or 0, default=None)


def batches_per_second(entry: Mapping[str, Any]) -> float | None:
    """The loop's rate from the loader's own batches, leaving out the first (worker start-up)."""
    batches, first, last = entry.get("batches") or 0, entry.get("first_batch_s"), entry.get("last_batch_s")
    return None if batches < 2 or first is None or last is None or last <= first else (batches - 1) / (last - first)


class LoopStep(NamedTuple):
    """The training loop's step as the hook timed it: seconds per batch, and how many steps."""

    compute_s: float
    wait_s: float
    steps: int


def loop_step(entry: Mapping[str, Any]) -> LoopStep | None:
    """The loop's compute and data wait per batch, as the hook timed them; None under FEW_STEPS steps or no compute."""
    steps = int(entry.get("loop_steps") or 0)
    seconds, wait = float(entry.get("loop_seconds") or 0.0), float(entry.get("loop_wait_seconds") or 0.0)
    return None if steps < FEW_STEPS or seconds - wait <= 0 else LoopStep((seconds - wait) / steps, wait / steps, steps)


def main(argv: list[str] | None = None) -> int:
    """`python -m profiling.capture SCRIPT ARGS`: run a script as `python SCRIPT ARGS` would, hooked."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m profiling.capture SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    install()
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
