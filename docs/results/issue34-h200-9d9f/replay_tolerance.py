"""Replay: would a wider tolerance than the kit's 3 % have advised better? (Not adopted: one verdict of all changes.)

For every issue-34 folder with a judge, the trials' recorded steps (`run.loaders.json`) are advised again as the kit
advises (`profiling.turns.fewest_within`, its noise allowance and 5 % cap) at tolerances of 2 to 5 %, and each
advice is scored against the judge's paired levels (`MISS`: over 5 % behind its best or past its knee + 2).
From the repo root: python docs/results/issue34-h200-9d9f/replay_tolerance.py
"""
import os
import sys

from profiling.turns import fewest_within, measured_steps, step_noise

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "issue34-head"))
from replay_paired import judged_records, score  # noqa: E402

TOLERANCES = (0.02, 0.03, 0.04, 0.05)  # 0.03 is the kit's
misses = dict.fromkeys(TOLERANCES, 0)
records = 0
for folder, record, judge in judged_records():
    steps, noise = measured_steps(record), step_noise(record)
    scores = {t: score(fewest_within(steps, tolerance=t, noise=noise), judge) for t in TOLERANCES}
    records += 1
    for t, s in scores.items():
        misses[t] += "MISS" in s or "not judged" in s
    print(f"{folder.split('results/')[1]:46} best {judge['best']:2} knee {judge['knee']:2}  "
          + "  ".join(f"{100 * t:.0f}%: {s:14}" for t, s in scores.items()))
print(f"\n{records} judged records; misses by tolerance: "
      + ", ".join(f"{100 * t:.0f}% {n}" for t, n in misses.items()))
