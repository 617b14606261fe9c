"""Replay: do the trials drift, and would a time trend taken out of the turns have advised better? (Not adopted.)

For every issue-34 folder with a judge: (1) each count's error, the trials' log speed relative to the judge's paired
level (both centred within the folder), against the mean time of its turns within the trials (0 = first, 1 = last),
fitted with the count's log as a second regressor; (2) each count's step refitted as log(turn's step) = count's level
+ a straight line in time, weighted by each turn's batches, and the advice drawn from those levels as the kit draws
it (`profiling.turns.fewest_within`), both advices scored against the judge.
From the repo root: python docs/results/issue34-h100-ff64/replay_trend.py
"""
import math
import os
import sys

import numpy as np

from profiling.turns import MIN_TIMED, fewest_within, measured_steps, step_noise

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "issue34-head"))
from replay_paired import judged_records, score  # noqa: E402


def turns_in_time(record, steps):
    """(count, batches, seconds, mid-time) of each timed turn after the baseline turns of the script's own count."""
    segments, own, start, t, rows = record["segments"], record.get("own_workers"), 0, 0.0, []
    while start < len(segments) and segments[start][0] == own:
        start += 1
    for i, (k, n, seconds) in enumerate(segments):
        if i >= start and n >= MIN_TIMED and k in steps:
            rows.append((k, n, seconds, t + seconds / 2))
        t += seconds
    return rows


def detrended(rows, steps):
    counts = sorted({r[0] for r in rows})
    if len(rows) < len(counts) + 3:
        return steps, {}
    time = np.array([r[3] for r in rows])
    time = (time - time.mean()) / (time.std() or 1.0)
    x = np.column_stack([[1.0 * (r[0] == k) for r in rows] for k in counts] + [time])
    w = np.sqrt([r[1] for r in rows])
    y = np.log([r[2] / r[1] for r in rows])
    beta, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    resid = (y - x @ beta) * w
    cov = resid @ resid / (len(rows) - x.shape[1]) * np.linalg.pinv((x * w[:, None]).T @ (x * w[:, None]))
    levels = {k: math.exp(beta[i]) for i, k in enumerate(counts)}
    return {**steps, **levels}, {k: levels[k] * math.sqrt(cov[i, i]) for i, k in enumerate(counts)}


position, log_count, error = [], [], []
for folder, record, judge in judged_records():
    steps = measured_steps(record)
    rows = turns_in_time(record, steps)
    level = {int(k): v for k, v in judge["paired_vs_best"].items()}
    common = [k for k in steps if k in level and k >= 4 and any(r[0] == k for r in rows)]
    if len(common) >= 3:
        end = sum(r[2] for r in rows)
        when = {k: sum(r[1] * r[3] for r in rows if r[0] == k) / sum(r[1] for r in rows if r[0] == k) / end
                for k in common}
        err = {k: math.log(level[k] * steps[k]) for k in common}
        for k in common:
            position.append(when[k] - np.mean(list(when.values())))
            log_count.append(math.log(k) - np.mean([math.log(j) for j in common]))
            error.append(err[k] - np.mean(list(err.values())))
    kit = fewest_within(steps, noise=step_noise(record))
    levels, noise = detrended(rows, steps)
    trend = fewest_within(levels, noise=noise)
    print(f"{folder.split('results/')[1]:48} best {judge['best']:2} knee {judge['knee']:2}   kit {score(kit, judge):16}"
          f" detrended {score(trend, judge)}")

x = np.column_stack([position, log_count])
beta, *_ = np.linalg.lstsq(x, np.array(error), rcond=None)
resid = np.array(error) - x @ beta
se = np.sqrt(np.diag(resid @ resid / (len(error) - 2) * np.linalg.inv(x.T @ x)))
print(f"\n{len(error)} counts: log speed error (trials vs judge) per unit of turn time {beta[0]:+.3f} (se {se[0]:.3f}),"
      f" per log count {beta[1]:+.3f} (se {se[1]:.3f})")
