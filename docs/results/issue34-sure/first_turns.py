"""Each tried count's first turn beside the fastest first turn, and the judge's level beside its best.

Run from this folder: python first_turns.py h100-*/*/   (prints one line per run: count:first-turn/judge)
"""
import json
import sys
from pathlib import Path

for folder in map(Path, sys.argv[1:]):
    judge = folder / "judge" / "judge.json"
    if not judge.exists():
        continue
    level = json.loads(judge.read_text())["paired_vs_best"]
    first: dict[int, float] = {}
    for k, n, seconds in json.loads((folder / "run.loaders.json").read_text())["trials"]["segments"][1:]:
        if n >= 5 and k not in first:  # after the baseline turn; a turn of 5 timed batches or more
            first[k] = seconds / n
    best = min(first.values())
    cells = [f"{k}:{v / best:.2f}" + (f"/{1 / level[str(k)]:.2f}" if str(k) in level else "")
             for k, v in sorted(first.items())]
    print(folder, " ".join(cells))
