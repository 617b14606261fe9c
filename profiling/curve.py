"""The measured loader curve as data: read and write its JSON, and pick num_workers from it.

Pure functions, no torch: the report reads a curve that `profiling loader` (or `run`) measured
earlier, maybe on another machine. `choose_workers` is the heart of the measured advice: the
fewest workers whose measured throughput covers the loop's compute rate with CURVE_MARGIN to spare.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from profiling.records import CurvePoint, LoaderCurve, ProfileError

# The fallback's constants (docs/profiling-model.md, "the fallback"): a curve timed alone must reach
# CURVE_MARGIN x the loop's rate; a paced one (each batch held for the loop's step) FED_SHARE of the held
# rate, or settle within LEVEL of its own level once near it; then PACED_SLACK workers more, because the
# hold is the traced step, longer than the real one.
CURVE_MARGIN = 2.0
FED_SHARE = 1 / 1.05
PACED_SLACK = 2
LEVEL = 0.02
FLAT = 0.05        # a curve that gains less than this from its last step has flattened
ZERO_WORKERS = 0.05  # num_workers=0 only when building a batch costs under 5 % of a step


@dataclass(frozen=True)
class CurveChoice:
    """What the curve says for one loop: the workers, and why."""

    workers: int
    target_rate: float         # batches/s the workers must deliver
    chosen_rate: float | None  # the curve at `workers` (interpolated between measured points)
    best_rate: float           # highest batches/s measured within the worker cap
    best_workers: int          # fewest measured workers within FLAT of best_rate
    max_workers: int           # largest k the advice could take: the cap, or the largest measured
    capped: bool               # the curve still rose at the cap (or kept up only above it)
    never_keeps_up: bool       # the curve flattened below the target
    fed_workers: int | None = None  # a paced curve: the fewest workers that reach the target (before the slack)
    fed_rate: float | None = None   # ... and their batches/s


def rate_at(points: list[CurvePoint], workers: int) -> float:
    """Batches/s at `workers`, linear between the measured points with k >= 1 (the curve's shape
    between them is not known; linear is the plain guess and is exact at the measured points)."""
    pts = sorted((p for p in points if p.workers >= 1), key=lambda p: p.workers)
    for lo, hi in zip(pts, pts[1:]):
        if lo.workers <= workers <= hi.workers:
            share = (workers - lo.workers) / (hi.workers - lo.workers)
            return lo.batches_per_s + share * (hi.batches_per_s - lo.batches_per_s)
    return next(p.batches_per_s for p in pts if p.workers == workers)


def choose_workers(curve: LoaderCurve, compute_s: float, worker_cap: int,
                   margin: float = CURVE_MARGIN, fed_share: float = FED_SHARE) -> CurveChoice | None:
    """The fewest workers (<= worker_cap) whose throughput is at least `margin` / compute_s; for a
    paced curve (hold_ms > 0), the fewest (0 counted like any k) at least `fed_share` / hold, or whose
    loop slept for batches under 1 / fed_share - 1 of each held step (k >= 1, measured points), or
    within LEVEL of where the curve settles from k up, once some k comes within LEVEL of that, then
    PACED_SLACK more when that is one or more (within the worker cap: the slack is a rule, not a
    reading of the curve, so it may pass the curve's top point).

    When none within the cap reaches it: CPU-capped if the curve reaches it above the cap or was
    still rising at its last step (more CPUs would help), else the loader cannot keep up at any k
    and the advice is the fewest workers within FLAT of the best the cap allows. None when the curve
    stops short of the cap (measured on fewer CPUs) while still rising: then only an estimate remains."""
    paced = curve.hold_ms > 0
    target = fed_share / (curve.hold_ms / 1e3) if paced else margin / compute_s if compute_s > 0 else math.inf
    ordered = sorted(curve.points, key=lambda p: p.workers)
    positive = [p for p in ordered if p.workers >= 1]
    top = min(worker_cap, positive[-1].workers) if positive else 0
    ks = range(positive[0].workers, top + 1) if positive and positive[0].workers <= top else range(0)
    rates = {k: rate_at(positive, k) for k in ks}
    zero = curve.rate(0)
    best = max([*rates.values(), zero or 0.0])
    best_k = min([k for k, r in rates.items() if r >= (1 - FLAT) * best] or [0])
    if zero is not None and (zero >= target if paced else compute_s > 0 and zero * ZERO_WORKERS * compute_s >= 1):
        return CurveChoice(0, target, zero, best, best_k, top, False, False)
    def fed(k: int, rate: float) -> bool:
        """Reaches the target; or kept the loop waiting (asleep for a batch) under the share of a step
        that the target allows; or (once some k comes within LEVEL of the target) settles within LEVEL of
        the curve from k up."""
        above = [p.batches_per_s for p in positive if k <= p.workers <= top]
        return rate >= target or waited_share(k) <= 1 / fed_share - 1 or (
            best >= (1 - LEVEL) * target and bool(above) and rate >= (1 - LEVEL) * statistics.median(above))

    def waited_share(k: int) -> float:
        """The measured point's sleep for batches per held step (inf where not measured): a slow hand-over on
        a busy CPU lowers the rate, but only a late batch makes the loop sleep, and only that more workers fix."""
        point = next((p for p in positive if p.workers == k and p.waited_s is not None and p.batches), None)
        return math.inf if point is None else point.waited_s / point.batches / (curve.hold_ms / 1e3)

    for k, rate in rates.items():
        if paced and fed(k, rate):
            advised = min(k + PACED_SLACK, worker_cap)
            return CurveChoice(advised, target, rates.get(advised), best, best_k, top, False, False,
                               fed_workers=k, fed_rate=rate)
        if rate >= target:
            return CurveChoice(k, target, rate, best, best_k, top, False, False)
    # more CPUs would help: the curve reaches the target above the cap, or still rises past it
    above = any(p.workers > top and (p.batches_per_s >= target or p.batches_per_s > (1 + FLAT) * rates.get(top, 0))
                for p in positive)
    # k = 0 counts here: from 0 to 1 worker alone may show the rise
    rising = len(ordered) >= 2 and ordered[-1].batches_per_s > (1 + FLAT) * ordered[-2].batches_per_s
    if not above and positive and positive[-1].workers < worker_cap and (rising or len(positive) < 2):
        return None  # measured on fewer CPUs than the next run may have, and still short: it cannot say
    if above or (rising and positive[-1].workers <= worker_cap) or not rates:
        return CurveChoice(top, target, rates.get(top), best, best_k, top, True, False)
    return CurveChoice(best_k, target, rates.get(best_k, zero), best, best_k, top, False, True)


def curve_to_dict(curve: LoaderCurve) -> dict:
    return {**asdict(curve), "points": [asdict(p) for p in curve.points]}


def write_curve(curve: LoaderCurve, path: Path) -> Path:
    path.write_text(json.dumps(curve_to_dict(curve), indent=2) + "\n", encoding="utf-8")
    return path


def read_curve(path: Path) -> LoaderCurve:
    """A curve written by `write_curve`; ProfileError (one line, exit 2) for anything else."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        points = tuple(CurvePoint(int(p["workers"]), int(p["batches"]), float(p["seconds"]), float(p["batches_per_s"]),
                                  None if p.get("waited_s") is None else float(p["waited_s"])) for p in data["points"])
        curve = LoaderCurve(points, int(data["cpus"]), data.get("batch_size"), bool(data.get("pin_memory")),
                            str(data.get("where", "")), float(data.get("hold_ms") or 0.0))
    except OSError as err:
        raise ProfileError(f"cannot read the loader curve {path}: {err.strerror or err}") from None
    except (ValueError, KeyError, TypeError) as err:
        raise ProfileError(f"{path} is not a loader curve ({type(err).__name__}: {err})") from None
    if not points or any(p.workers < 0 or p.batches_per_s < 0 for p in points):
        raise ProfileError(f"{path} is not a loader curve (no points, or a negative one)")
    return curve
