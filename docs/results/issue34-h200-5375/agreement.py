"""How often does a judge agree with itself? Every stored judge of issue 34, replayed from its windows.

1. Split: each judge with 2+ processes a count is cut in two, one process a count (the "advisor", who advises its
   own knee, the fewest counts within 5 % of its best) against the others (the "judge"). The goals are met when the
   advisor's count is within 5 % of the judge's best and at most the judge's knee + 2.
2. The kit's recorded advice against the same part-judges, so both meet the same, smaller judge.
3. Decision rules replayed: from each profiled run's trials (run.loaders.json), the count each rule would advise,
   judged by that run's whole judge. "kit" is profiling.turns.fewest_within, today's rule
   (within 5 % of the fastest since 2026-11-29; the rule before it is replayed beside it).
From the repo root: python docs/results/issue34-h200-5375/agreement.py
"""
import json
import math
import statistics
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]
from rotation_judge import judge  # noqa: E402

from profiling.turns import fewest_within, measured_steps, step_noise  # noqa: E402

RESULTS = ROOT / "docs" / "results"


def met(frame: pd.DataFrame, advice: int) -> bool | None:
    """Both goals of issue 34 for `advice` against the judge drawn from `frame` (None: the count was not judged)."""
    if advice not in set(frame["workers"]):
        return None
    verdict = judge(frame, advice, draws=10)
    return bool(verdict["within_5pct"] and verdict["at_most_knee_plus_2"])


def within_line(steps: dict[int, float], noise: dict[int, float], k: int, share: float, errors: float = 0.0) -> float:
    """The slowest step count k may have: `share` behind the fastest, plus `errors` standard errors of the gap."""
    fastest = min(steps, key=lambda j: steps[j])
    return (1 + share) * steps[fastest] + errors * math.hypot(noise.get(k, 0.0), noise.get(fastest, 0.0))


def within(steps: dict[int, float], noise: dict[int, float], share: float, errors: float = 0.0) -> int:
    """The fewest counts whose step is within `share` of the fastest, plus `errors` standard errors of the gap."""
    return min(k for k, s in steps.items() if s <= within_line(steps, noise, k, share, errors))


def plateau(steps: dict[int, float], share: float) -> int:
    """The fewest counts within `share` of the plateau: the least median step of the counts at or above some k (the
    fastest of several noisy counts on a flat curve is a low draw; added in the sixteenth session)."""
    level = min(statistics.median([s for j, s in steps.items() if j >= k]) for k in steps)
    return min(k for k, s in steps.items() if s <= (1 + share) * level)


RULES = {"kit (5 %, from 2026-11-29)": lambda s, n: fewest_within(s),
         "3 %, or its noise up to 5 % (to 11-28)": lambda s, n: min(
             k for k, v in s.items() if v <= min(within_line(s, n, k, 0.03, 1.0), within_line(s, n, k, 0.05))),
         "plateau 5 %": lambda s, n: plateau(s, 0.05),
         "fastest": lambda s, n: within(s, n, 0.0), "within 3 %": lambda s, n: within(s, n, 0.03),
         "within 5 %": lambda s, n: within(s, n, 0.05), "within 8 %": lambda s, n: within(s, n, 0.08),
         "within 5 % + 1 s.e.": lambda s, n: within(s, n, 0.05, 1.0),
         "within 5 % + 2 s.e.": lambda s, n: within(s, n, 0.05, 2.0)}

split, replay = [], []
for windows in sorted(RESULTS.glob("**/judge/windows.csv")):
    frame, run = pd.read_csv(windows), windows.parents[1]
    name = str(run.relative_to(RESULTS))
    recorded = json.loads((windows.parent / "judge.json").read_text()).get("advice") \
        if (windows.parent / "judge.json").exists() else None
    if "replica" in frame and frame["replica"].nunique() >= 2:
        for held in sorted(frame["replica"].unique()):
            advisor = judge(frame[frame["replica"] == held], None)["knee"]
            rest = frame[frame["replica"] != held]
            split.append({"run": name, "held": held, "advisor": advisor, "advisor_met": met(rest, advisor),
                          "kit": recorded, "kit_met": met(rest, recorded) if recorded is not None else None})
    trials = json.loads((run / "run.loaders.json").read_text()).get("trials") \
        if (run / "run.loaders.json").exists() else None
    steps = measured_steps(trials)
    if recorded is not None and len(steps) >= 2:
        noise = step_noise(trials)
        replay.append({"run": name, **{rule: met(frame, pick(steps, noise)) for rule, pick in RULES.items()}})

split_table = pd.DataFrame(split)
print("1. One process a count against the judge's other processes (its own knee as the advice):")
print(f"   both goals met {int(split_table['advisor_met'].sum())} of {len(split_table)} splits,"
      f" {split_table['run'].nunique()} judges")
with_kit = split_table.dropna(subset=["kit_met"])
print("2. The same splits where the judge has the kit's advice:")
print(f"   kit's advice {int(with_kit['kit_met'].sum())} of {len(with_kit)},"
      f" the judge's own process {int(with_kit['advisor_met'].sum())} of {len(with_kit)}")
print("   per node (kit / judge's own process):")
for node, part in with_kit.groupby(with_kit["run"].str.rsplit("/", n=1).str[0]):
    print(f"     {node:48} {int(part['kit_met'].sum()):2} / {int(part['advisor_met'].sum()):2} of {len(part)}")
print("3. Decision rules replayed on each profiled run's trials, judged by its whole judge:")
replay_table = pd.DataFrame(replay)
for rule in RULES:
    column = replay_table[rule].dropna()
    print(f"   {rule:40} {int(column.sum()):2} of {len(column)}")
