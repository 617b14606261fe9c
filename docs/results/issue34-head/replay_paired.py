"""Replay: would pairing the trials' turns by round have advised better? (Not adopted: it did worse.)

For every issue-34 folder with a judge, the trials' recorded turns (`run.loaders.json`) are split into rounds
(a count seen again opens the next round, after the baseline turns of the script's own count), and each count's
step is taken as the reference count's mean step times the geometric mean, over the rounds both were timed in,
of their ratio; the noise is that ratio's standard error over three or more rounds. The advice is then drawn as
the kit draws it (`profiling.turns.fewest_within`) and both advices are scored against the judge's paired levels.
From the repo root: python docs/results/issue34-head/replay_paired.py
"""
import glob
import json
import math
import os
import statistics

from profiling.turns import MIN_TIMED, fewest_within, measured_steps, step_noise


def rounds_of(record):
    segments, own = record["segments"], record.get("own_workers")
    start = 0
    while start < len(segments) and segments[start][0] == own:  # the baseline turns
        start += 1
    rounds, current = [], {}
    for k, n, seconds in segments[start:]:
        if k in current:
            rounds.append(current)
            current = {}
        if n >= MIN_TIMED:
            current[k] = seconds / n
    return rounds + [current] if current else rounds


def paired(record):
    steps, rounds = measured_steps(record), rounds_of(record)
    ref = min(steps, key=lambda k: (-sum(k in r for r in rounds), steps[k]))  # timed in most rounds, then fastest
    levels, noise = {ref: steps[ref]}, {ref: 0.0}
    for k in steps:
        logs = [math.log(r[k] / r[ref]) for r in rounds if k in r and ref in r]
        if k == ref or not logs:
            levels.setdefault(k, steps[k])
            continue
        levels[k] = steps[ref] * math.exp(statistics.fmean(logs))
        if len(logs) >= 3:
            noise[k] = steps[ref] * statistics.stdev(logs) / math.sqrt(len(logs))
    return levels, noise


def score(advice, judge):
    level = {int(k): v for k, v in judge["paired_vs_best"].items()}
    if advice not in level:
        return f"{advice}: not judged"
    ratio = 1 / level[advice]
    return f"{advice}: {ratio:.3f}" + ("" if ratio <= 1.05 and advice <= judge["knee"] + 2 else " MISS")


def judged_records():
    """(folder, trials record, judge) of every issue-34 folder whose run tried counts and has a judge."""
    for path in sorted(glob.glob("docs/results/issue34-*/*/*/judge/judge.json")):
        folder = os.path.dirname(os.path.dirname(path))
        records = os.path.join(folder, "run.loaders.json")
        if not os.path.exists(records):
            continue
        record, judge = json.load(open(records))["trials"], json.load(open(path))
        if measured_steps(record) and record.get("segments"):
            yield folder, record, judge


def main():
    for folder, record, judge in judged_records():
        kit = fewest_within(measured_steps(record), noise=step_noise(record))
        levels, noise = paired(record)
        print(f"{folder.split('results/')[1]:48} best {judge['best']:2} knee {judge['knee']:2}   "
              f"kit {score(kit, judge):18} paired {score(fewest_within(levels, noise=noise), judge)}")


if __name__ == "__main__":
    main()
