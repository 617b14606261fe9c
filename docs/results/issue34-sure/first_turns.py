"""Each tried count's first turn beside the fastest first turn, and the judge's level beside its best.

A turn cut by an epoch's end goes on in the next epoch as a segment of its own: consecutive segments of one
count are one turn here, as the trials' running sums see them. Run from this folder:
python first_turns.py h100-*/*/   (one line per run: count:first-turn/judge)
"""
import json
import sys
from pathlib import Path

for folder in map(Path, sys.argv[1:]):
    judge = folder / "judge" / "judge.json"
    if not judge.exists():
        continue
    level = json.loads(judge.read_text())["paired_vs_best"]
    turns: list[list[float]] = []  # [count, steps, seconds] of each turn, the baseline's left out
    for k, n, seconds in json.loads((folder / "run.loaders.json").read_text())["trials"]["segments"][1:]:
        if turns and turns[-1][0] == k:
            turns[-1][1:] = [turns[-1][1] + n, turns[-1][2] + seconds]
        else:
            turns.append([k, n, seconds])
    first: dict[int, float] = {}
    for k, n, seconds in turns:
        if n >= 5 and k not in first:
            first[int(k)] = seconds / n
    best = min(first.values())
    cells = [f"{k}:{v / best:.2f}" + (f"/{1 / level[str(k)]:.2f}" if str(k) in level else "")
             for k, v in sorted(first.items())]
    print(folder, " ".join(cells))
