"""Plain data shared by the pipeline's stages: apart from them, so that any stage can import it without importing
another (no cycles), and a reader sees the whole data model in one screen.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # annotations only: the job checker imports this module and must start fast
    import pandas as pd

# Phase labels, in a training step's order. `data_wait`: the `for ... in loader` header, waiting for the next batch.
PHASES: tuple[str, ...] = ("data_wait", "host_to_device", "forward", "loss", "backward", "optimizer",
                           "logging_sync", "other")

LINE_COLUMNS: tuple[str, ...] = ("file", "function", "line", "hits", "seconds", "ms_per_hit", "pct_of_function",
                                 "source", "phase")


class ProfileError(ValueError):
    """Bad input (missing, truncated, not a profile, unsafe pickle...): one clear line, exit 2."""


@dataclass(frozen=True)
class LineProfile:
    """What a .lprof holds, whatever line_profiler version wrote it. timings: {(filename, first_lineno, function_name):
    [(lineno, hits, ticks), ...]}; unit: seconds per tick (1e-6 for 3.x files, 1e-9 for 4.x/5.x)."""

    timings: dict[tuple[str, int, str], list[tuple[int, int, int]]]
    unit: float


@dataclass(frozen=True)
class JobFacts:
    """The resources the advice is about: what this job may use and what it asked for."""

    cpus: int                       # CPUs this job may use (Slurm allocation / affinity mask)
    gpus: int                       # GPUs visible to the job (0 on a CPU-only run)
    num_workers: int | None         # the DataLoader workers the profiled run used, if known
    cores_per_gpu: int | None = None  # the node's cores per GPU, when known (caps --cpus-per-task)
    source: str = ""                # where the numbers came from, said in the report
    requested: bool = False         # `cpus` is what the job asked for (Slurm or --cpus), not just a machine's size
    pin_memory: bool | None = None  # the run's --pin-memory / --no-pin-memory; None when it did not say
    persistent_workers: bool | None = None  # on; False: the script says False in so many words; None: not said
    epoch_told: str | None = None  # file:line that tells the dataset its epoch, which persistent workers would not see
    read_share: float | None = None  # share of the workers' time spent opening and reading files (io_split)
    read_ms: float | None = None     # ... per batch, and decoding/transforming per batch, when measured
    decode_ms: float | None = None
    loader_at: str | None = None    # file:line where the script built the loop's DataLoader (profiling.capture)
    loader_built_by: str | None = None  # ... or the installed package that built it from that line (HF's Trainer)
    loader_call: str = "DataLoader"  # what that line calls: DataLoader, or a helper or functools.partial of it
    workers_flag: str | None = None  # the script's own option for workers (-j/--workers/--num-workers...)
    by_cpu_count: bool = False      # the DataLoader's num_workers comes from cpu_count(): the node's, not the job's
    workers_given: str | None = None  # ... or from this (`args.workers`, `cfg.num_workers`), where not a number
    loader_kwargs: str | None = None  # the dict that line spreads into the call (`**train_kwargs`), if one
    workers_set_at: str | None = None  # "file:line  num_workers: int = {n}": where that is set, when one line does
    workers_from_slurm: str | None = None  # file:line that sets the count from SLURM_CPUS_PER_TASK: the #SBATCH sets it
    kit_script: bool = False        # one of this kit's scripts, whose own flags the hints may name
    other_loader: str | None = None  # file:line of another DataLoader that ran more workers, set apart (unseen n_5)
    other_workers: int = 0           # ... and its workers, whose CPUs --cpus-per-task keeps


Level = Literal["advice", "warning", "note"]  # "Why" list / a warning about the run / an extra suggestion


@dataclass(frozen=True)
class AdviceNumbers:
    """Every number the advice rules test and their messages show (`model_numbers`). The fields after
    `num_workers` describe the training loop; they stay None (or False) when no loader loop was found."""

    loop_found: bool
    cpus: int                  # the job's CPUs
    gpus: int
    current_workers: int       # the profiled run's num_workers (ASSUMED_WORKERS when unknown)
    workers_known: bool
    requested: bool            # the CPUs were asked for (JobFacts.requested)
    cpu_ceiling: int           # CPUs the next run may have: the job's, or the node's cores per GPU
    main_cpus: int             # CPUs the main process keeps busy besides the workers
    worker_cap: int            # cpu_ceiling - main_cpus: the most workers that fit
    pin_memory: bool | None
    persistent_workers: bool | None
    compute_kind: str          # "GPU" or "CPU"
    io_known: bool = False              # the workers' file reads were measured (io_split in the run's meta)
    other_loader: str | None = None     # JobFacts.other_loader, and the CPUs its workers need
    other_cpus: int = 0
    read_ms: float = 0.0                # the workers' open/read time per batch
    decode_ms: float = 0.0              # ... and their decode/transform time per batch
    read_pct: float = 0.0               # reads, % of the workers' time
    reads_dominate: bool = False        # read_pct >= READS_DOMINATE: the files, not the decoding, cost most
    num_workers: int | None = None      # the advice; None without a loop
    cpus_per_task: int | None = None
    loader_bound: bool = False          # data wait >= LOADER_BOUND of a step, and more than a hand-over
    handoff_only: bool = False          # data wait >= LOADER_BOUND of a step, but only the hand-over cost
    capped: bool = False                # the need does not fit in worker_cap (tried: waited at every count)
    spare_dropped: bool = False         # the average fits, twice it does not
    batches: int | None = None
    wait_ms: float | None = None        # data wait per batch
    compute_ms: float | None = None     # compute per batch
    produce_ms: float | None = None     # what one worker needs to build a batch
    wait_pct: float | None = None       # data wait, % of a step
    raw_workers: int | None = None      # the average need: ceil(produce / compute)
    needed_workers: int | None = None   # the estimate (bare profile) or the measured need (curve)
    loop_where: str | None = None       # file:line of the loop header
    basis: str = "none"  # "tried" (in the run), "measured" (curve), "own", "estimate", "kept", "stream" or "none"
    estimate_high: int | None = None    # the estimate's upper bound: ceil(ESTIMATE_FACTOR x average need)
    compute_rate: float | None = None   # batches/s the loop consumes: 1 / compute per batch
    target_rate: float | None = None    # what the workers must deliver: FED_SHARE / hold
    chosen_rate: float | None = None    # the curve's batches/s at the advised workers
    curve_best_rate: float | None = None     # the curve's highest batches/s within the CPUs
    curve_best_workers: int | None = None    # ... and the fewest workers within 5 % of it
    curve_max_workers: int | None = None     # the largest k the curve measured
    curve_chosen: int | None = None          # basis "own": the curve's choice, and its step (ms), both slower
    curve_step_ms: float | None = None
    never_keeps_up: bool = False        # the curve flattened below the target: no k keeps up
    curve_short: bool = False           # a curve measured on fewer CPUs, still short of the target: estimate
    curve_cpus: int | None = None       # the CPUs the curve was measured on
    curve_command: str | None = None    # the command that measures the curve (named by an estimate)
    curve_hold_ms: float = 0.0          # the curve's hold: each batch held this long, as the loop would
    curve_fed_workers: int | None = None  # a paced curve: the fewest workers that kept the held loop fed
    curve_fed_rate: float | None = None  # ... and the batches/s they gave the held loop
    curve_slack: int | None = None      # ... and how many the advice adds to them (PACED_SLACK, or fewer at the cap)
    tried: dict | None = None           # measured in the run, untraced: workers -> seconds per step
    tried_noise: dict | None = None     # ... and the standard error of each of those means
    tried_text: str = ""                # ... in words, fastest first
    zero_untried: str = ""              # a CPU-only job whose own workers kept 0 out of the counts tried: 0 and those
    tolerance_pct: float = 0.0          # the advice: the fewest workers within this % of the best step
    behind_workers: int | None = None   # the advised count, or the next one down (up, if none) where the fastest was:
    behind_pct: float | None = None     # ... its step behind the fastest's, in %, ...
    behind_noise_pct: float | None = None  # ... give or take this (two standard errors of the gap)
    tried_turns: int | None = None      # the advised and the fastest count's fewer turns (3 show their spread)
    tried_wait_pct: float | None = None  # the loop's least wait over the counts tried, % of a step
    least_wait_at: int | None = None  # ... and the count it waited least at
    tried_cpus: int | None = None       # the CPUs the trials had: fewer than `cpus` where --cpus or the script said
    keeps_cpus: bool = False            # a CPU-only loop the loader kept up with keeps its CPUs: its step runs there
    starts: int = 0                     # the turns that started their count's workers, ...
    start_total_s: float = 0.0          # ... the seconds they took to the first batch, ...
    turn_s: float = 0.0                 # ... and a turn's least timed seconds where that made turns longer
    traced_step_ms: float | None = None    # the traced loop's step (the hook's, else the profile's wait + compute)
    untraced_step_ms: float | None = None  # the same loop's step untraced, with the run's own workers
    traced_batches: int | None = None   # the batches line tracing covered
    step_needs_cpus: bool = False       # tried although the loader kept up: held to its CPUs the step computed
    held_cpus: int | None = None        # ... slower on these CPUs than traced on all of them
    traced_compute_ms: float | None = None  # ... the traced compute per batch it is compared with
    fallback: str = ""                  # why the run's own loop could not be measured (the advice falls back)


@dataclass(frozen=True)
class CurvePoint:
    """The loader alone with `workers` workers: batches delivered per second after the first."""

    workers: int
    batches: int
    seconds: float
    batches_per_s: float
    waited_s: float | None = None  # a paced curve: the main process asleep waiting for those batches (Linux)


@dataclass(frozen=True)
class LoaderCurve:
    """Batches per second against num_workers, measured on the job's CPUs (profiling.loader_curve)."""

    points: tuple[CurvePoint, ...]
    cpus: int                    # CPUs the measurement ran on (the job's)
    batch_size: int | None
    pin_memory: bool
    where: str = ""              # file:line where the measured DataLoader was built, when known
    hold_ms: float = 0.0         # each batch was held this long, as a loop would (0: taken at once)

    def rate(self, workers: int) -> float | None:
        return next((p.batches_per_s for p in self.points if p.workers == workers), None)


def curve_timing(hold_ms: float) -> str:
    """How every place says a curve was timed: 'timed alone' (older curves), or 'each batch held X ms'."""
    return f"each batch held {hold_ms:g} ms" if hold_ms > 0 else "timed alone"


def plural(text: str) -> str:
    """'1 worker(s)' as '1 worker' and '4 worker(s)' as '4 workers': the messages are templates for any count."""
    return re.sub(r"\b(\d+) (\w+)\(s\)", lambda m: f"{m[1]} {m[2]}{'s' * (m[1] != '1')}", text)


@dataclass(frozen=True)
class Advice:
    """The report's recommendation, with the reasons a learner can check."""

    num_workers: int | None
    cpus_per_task: int | None
    reasons: list[str] = field(default_factory=list)      # level "advice": the "Why" list
    edits: list[str] = field(default_factory=list)        # exact lines to change
    fired_rules: list[str] = field(default_factory=list)  # names of the rules that matched, every level
    numbers: AdviceNumbers | None = None                  # the inputs the rules used
    warnings: list[str] = field(default_factory=list)     # level "warning": something wrong with the run
    notes: list[str] = field(default_factory=list)        # level "note": suggestions beside the advice
    briefs: list[str] = field(default_factory=list)       # the reasons in a few plain words (the terminal's "Why")


@dataclass(frozen=True)
class LoopSummary:
    """The training loop the advice is about, as profiled. `wait_seconds`: the `for ... in loader` header (waiting for a
    batch); `compute_seconds`: the rest of the body together, whichever line asynchronous CUDA work was charged to."""

    file: str
    function: str
    header_line: int
    batches: int                # iterations (hits of the loop body's first line)
    wait_seconds: float
    compute_seconds: float
    entries: int | None = None  # times the function ran (epochs), when the profile tells
    lines: tuple[int, int] = (0, 0)  # the loop's first and last line: its phases leave out the set-up around it

    @property
    def wait_per_batch(self) -> float:
        return self.wait_seconds / self.batches if self.batches else 0.0

    @property
    def compute_per_batch(self) -> float:
        return self.compute_seconds / self.batches if self.batches else 0.0

    @property
    def wait_fraction(self) -> float:
        total = self.wait_seconds + self.compute_seconds
        return self.wait_seconds / total if total > 0 else 0.0


@dataclass
class Report:
    """Everything a renderer needs; renderers do no analysis of their own."""

    lprof_path: Path
    lines: pd.DataFrame             # LINE_COLUMNS
    phases: pd.DataFrame            # one row per phase: phase, seconds, pct, per_batch_ms
    facts: JobFacts
    advice: Advice
    notes: list[str] = field(default_factory=list)      # caveats, missing sources, no loader loop...
    meta: dict[str, Any] = field(default_factory=dict)  # run metadata written by `run`, if any
    samples: pd.DataFrame | None = None                 # GPU/CPU utilisation samples, if any
    loop: LoopSummary | None = None                     # the training loop; None when none was found
    curve: LoaderCurve | None = None                    # the measured loader curve, if any
