"""The measured loader curve as data: read and write its JSON, and pick num_workers from it.

Pure functions, no torch: the report reads a curve that `run` (or the retired `loader`) measured, perhaps elsewhere.
Paced (each batch held for the loop's step), it says what such a loop gets, hand-over included. A curve timed alone
(older versions) is shown, not advised from: what workers deliver alone is not what a loop beside them gets
(docs/profiling-model.md).
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from profiling.records import CurvePoint, LoaderCurve, ProfileError

FED_SHARE = 1 / 1.05  # this and the next three: `choose_workers`'s constants (docs/profiling-model.md)
PACED_SLACK = 2    # more workers than the fewest fed: the hold (the traced step) is longer than the real step
LEVEL = 0.02
FLAT = 0.05        # a curve that gains less than this from its last step has flattened


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
    fed_workers: int | None = None  # the fewest workers that keep the held loop fed (before the slack)
    fed_rate: float | None = None   # ... and their batches/s


def rate_at(points: list[CurvePoint], workers: int) -> float:
    """Batches/s at `workers`, linear between the measured `points` (k >= 1, by k): the plain guess, exact at them."""
    for lo, hi in zip(points, points[1:]):
        if lo.workers <= workers <= hi.workers:
            share = (workers - lo.workers) / (hi.workers - lo.workers)
            return lo.batches_per_s + share * (hi.batches_per_s - lo.batches_per_s)
    return next(p.batches_per_s for p in points if p.workers == workers)


def choose_workers(curve: LoaderCurve, worker_cap: int) -> CurveChoice | None:
    """The fewest workers (<= worker_cap) that feed the held loop, then PACED_SLACK more; none fed: CPU-capped where
    more CPUs would help, else the fewest within FLAT of the best. None for a curve timed alone, or short of the cap
    and still rising (an estimate then). docs/profiling-model.md gives the rule in full."""
    if curve.hold_ms <= 0:
        return None
    target = FED_SHARE / (curve.hold_ms / 1e3)
    ordered = sorted(curve.points, key=lambda p: p.workers)
    positive = [p for p in ordered if p.workers >= 1]
    top = min(worker_cap, positive[-1].workers) if positive else 0
    ks = range(positive[0].workers, top + 1) if positive and positive[0].workers <= top else range(0)
    rates = {k: rate_at(positive, k) for k in ks}
    zero = curve.rate(0)
    best = max([*rates.values(), zero or 0.0])
    best_k = min([k for k, r in rates.items() if r >= (1 - FLAT) * best] or [0])
    if zero is not None and zero >= target:
        return CurveChoice(0, target, zero, best, best_k, top, False, False)

    def waited_share(k: int) -> float:
        """The point's sleep for batches per held step (inf unmeasured): a slow hand-over on a busy CPU lowers the
        rate, but only a late batch makes the loop sleep, and only that more workers fix."""
        point = next((p for p in positive if p.workers == k and p.waited_s is not None and p.batches), None)
        return math.inf if point is None else point.waited_s / point.batches / (curve.hold_ms / 1e3)

    for k, rate in rates.items():
        above = [p.batches_per_s for p in positive if k <= p.workers <= top]
        if rate >= target or waited_share(k) <= 1 / FED_SHARE - 1 or (
                best >= (1 - LEVEL) * target and bool(above) and rate >= (1 - LEVEL) * statistics.median(above)):
            advised = min(k + PACED_SLACK, worker_cap)
            return CurveChoice(advised, target, rates.get(advised), best, best_k, top, False, False,
                               fed_workers=k, fed_rate=rate)
    # more CPUs would help: the curve reaches the target above the cap, or still rises past it
    above_cap = any(p.workers > top and (p.batches_per_s >= target or p.batches_per_s > (1 + FLAT) * rates.get(top, 0))
                    for p in positive)
    # k = 0 counts here: from 0 to 1 worker alone may show the rise
    rising = len(ordered) >= 2 and ordered[-1].batches_per_s > (1 + FLAT) * ordered[-2].batches_per_s
    if not above_cap and positive and positive[-1].workers < worker_cap and (rising or len(positive) < 2):
        return None  # measured on fewer CPUs than the next run may have, and still short: it cannot say
    # one count of workers, no slower than none, shows no level: 0 and 1 worker build one batch at a time alike (x_5)
    alone = len(rates) == 1 and rates[top] >= (1 - FLAT) * (zero or 0.0)
    if above_cap or (rising and positive[-1].workers <= worker_cap) or not rates or alone:
        return CurveChoice(top, target, rates.get(top), best, best_k, top, True, False)
    return CurveChoice(best_k, target, rates.get(best_k, zero), best, best_k, top, False, True)


def write_curve(curve: LoaderCurve, path: Path) -> Path:
    path.write_text(json.dumps(asdict(curve), indent=2) + "\n", encoding="utf-8")  # asdict recurses into the points
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
