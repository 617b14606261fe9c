"""Judge the two num_workers rules on every stored GPU run of advice v2 (issue 17), offline.

Each stored run has the profile's compute per batch, the loader curve timed alone, often a paced curve
(each batch held for the loop's step) and a sweep of epoch times. This re-reads every curve with the
kit's own `profiling.curve.choose_workers` as it is now, so old runs are judged by today's rules, and
asks the issue's two questions of each: is the advised k within 5 % of the best epoch, and is it at
most the knee + 2 (the knee as every kit sweep picks it: `profiling.sweep.pick_knee`)? A k the sweep did not run
is read between its neighbours (marked ~). Run from the repository root:

    python benchmarks/judge_rules.py [--margins 1.5,2] [--all] [--runs docs/results/advice-rules/stored-runs.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profiling.curve import choose_workers  # noqa: E402
from profiling.records import CurvePoint, LoaderCurve  # noqa: E402
from profiling.sweep import KNEE_TOLERANCE, knee_of_times  # noqa: E402

RUNS = Path("docs/results/advice-rules/stored-runs.json")
WORKER_CAP = 14  # 16 CPUs, 2 kept for the main process: every stored run had 16


def curve_of(points: dict[str, float], hold_ms: float = 0.0) -> LoaderCurve:
    return LoaderCurve(tuple(CurvePoint(int(k), 0, 0.0, float(v)) for k, v in points.items()), 16, None, True,
                       "", hold_ms, 0.0)


def margin_rule(run: dict, margin: float) -> int | None:
    choice = choose_workers(curve_of(run["alone_curve"]), run["compute_ms"] / 1e3, WORKER_CAP, margin=margin)
    return choice.workers if choice else None


def paced_rule(run: dict) -> int | None:
    if not run.get("paced_curve") or not run.get("paced_hold_ms"):
        return None
    choice = choose_workers(curve_of(run["paced_curve"], run["paced_hold_ms"]), run["compute_ms"] / 1e3, WORKER_CAP)
    return choice.workers if choice else None


def knee_of(epoch_s: dict[str, float]) -> int:
    """The sweep's knee as every kit sweep picks it (`profiling.sweep.pick_knee`, on 1 / epoch time)."""
    knee = knee_of_times({int(w): s for w, s in epoch_s.items()})
    assert knee is not None
    return knee


def ratio_at(epoch_s: dict[str, float], k: int) -> tuple[float, bool]:
    """Epoch time at k over the best, and whether it was read between two swept settings."""
    times = {int(w): s for w, s in epoch_s.items()}
    best, ks = min(times.values()), sorted(times)
    if k in times:
        return times[k] / best, False
    below, above = [w for w in ks if w < k], [w for w in ks if w > k]
    if not below or not above:
        return times[ks[0] if not below else ks[-1]] / best, True
    lo, hi = below[-1], above[0]
    return (times[lo] + (k - lo) / (hi - lo) * (times[hi] - times[lo])) / best, True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=RUNS, help="the stored runs (JSON)")
    parser.add_argument("--margins", default="2", help="margins of the alone-curve rule to judge, comma-separated")
    parser.add_argument("--all", action="store_true", help="also runs without a paced curve")
    args = parser.parse_args()
    try:
        runs = json.loads(args.runs.read_text(encoding="utf-8"))
        margins = [float(m) for m in args.margins.split(",")]
    except (OSError, ValueError) as err:
        parser.exit(2, f"judge_rules.py: {err}\n")
    needed = {"id", "compute_ms", "alone_curve", "epoch_s"}
    bad = [i for i, r in enumerate(runs if isinstance(runs, list) else [None])
           if not isinstance(r, dict) or not needed <= r.keys() or not r["epoch_s"]]
    if bad:
        parser.exit(2, f"judge_rules.py: {args.runs}: run {bad[0]} is not a stored run "
                       f"(each needs {', '.join(sorted(needed))}, with epoch times)\n")
    runs = [r for r in runs if args.all or r.get("paced_curve")]
    rules = {f"margin {m:g}": (lambda r, m=m: margin_rule(r, m)) for m in margins} | {"paced": paced_rule}
    tally = {name: {"runs": 0, "within 5 %": 0, "<= knee + 2": 0, "both": 0, "CPUs saved": 0} for name in rules}
    print(f"| run | knee | best | {' | '.join(rules)} |\n|---|---:|---:|{'---:|' * len(rules)}")
    for run in runs:
        cells, knee = [], knee_of(run["epoch_s"])
        for name, rule in rules.items():
            k = rule(run)
            if k is None:
                cells.append("-")
                continue
            ratio, between = ratio_at(run["epoch_s"], k)
            fast, lean = ratio <= 1 + KNEE_TOLERANCE, k <= knee + 2  # as benchmarks/interleaved_sweep.py judges
            t = tally[name]
            t["runs"] += 1
            t["within 5 %"] += fast
            t["<= knee + 2"] += lean
            t["both"] += fast and lean
            t["CPUs saved"] += 16 - (k + 2)  # against the whole 16-core share of one GPU
            cells.append(f"{k}: {ratio:.3f}x{'~' if between else ''}{'' if fast and lean else ' (miss)'}")
        best = min(run["epoch_s"], key=run["epoch_s"].get)
        print(f"| {run['id']} | {knee} | {best} | {' | '.join(cells)} |")
    print("\n| rule | runs | within 5 % | <= knee + 2 | both | CPUs saved |\n|---|---:|---:|---:|---:|---:|")
    for name, t in tally.items():
        print(f"| {name} | {' | '.join(str(v) for v in t.values())} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
