"""Issue 34: the long trials' curve (one process, counts in turns) beside the judge's (one process a count), from
the files benchmarks/long_trials.sh writes. Each count's level is its rate over the best's, with a 90 % interval
drawn again from its turns (trials) or rounds and processes (benchmarks/rotation_judge.judge); then the count that
the kit's rule (profiling.turns.fewest_within) advises from each curve, and how the judge rates it.

    python benchmarks/long_trials_compare.py OUT/STYLE [...]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rotation_judge import judge  # noqa: E402

from profiling.turns import fewest_within, turn_means  # noqa: E402


def trials_curve(path: Path, draws: int = 2000) -> tuple[pd.DataFrame, int]:
    """Each count's rate level (over the fastest count's), its turns, its 90 % interval, and the kit's advice."""
    record = json.loads(path.read_text())["trials"]
    turns = turn_means(record["segments"])
    mean = {k: float(np.mean(m)) for k, m in turns.items()}
    advice = fewest_within(mean)
    best = min(mean, key=mean.get)
    rng, again = np.random.default_rng(0), {k: [] for k in turns}
    for _ in range(draws):
        drawn = {k: float(np.mean(rng.choice(m, len(m)))) for k, m in turns.items()}
        for k in turns:
            again[k].append(drawn[best] / drawn[k])
    rows = [{"workers": k, "turns": len(turns[k]), "ms_a_step": round(1e3 * mean[k], 3),
             "level": round(mean[best] / mean[k], 3),
             "level_90pct": [round(float(q), 3) for q in np.quantile(again[k], [0.05, 0.95])]} for k in sorted(turns)]
    return pd.DataFrame(rows).set_index("workers"), advice


def main(folders: list[str]) -> int:
    if not folders or not all(Path(f, "judge").is_dir() or any(Path(f).glob("*.loaders.json")) for f in folders):
        print("long_trials_compare: error: expected folders that long_trials.sh wrote (OUT/STYLE), got "
              f"{' '.join(folders) or 'none'}", file=sys.stderr)
        return 2
    for folder in map(Path, folders):
        print(f"== {folder}")
        windows = folder / "judge" / "windows.csv"
        verdict = judge(pd.read_csv(windows), None) if windows.exists() else None
        for name in ("trials", "one-alive"):
            path = folder / f"{name}.loaders.json"
            if not path.exists():
                continue
            curve, advice = trials_curve(path)
            if verdict:
                level = verdict["paired_vs_best"]
                curve["judge_level"] = [level.get(int(k)) for k in curve.index]
            print(f"-- {name}: {json.loads(path.read_text())['trials']['status']}, advice {advice}")
            print(curve.to_string())
            if verdict and advice in level:
                rated = judge(pd.read_csv(windows), advice)
                print(f"   judge of advice {advice}: best {rated['best']} knee {rated['knee']} ratio {rated['ratio']} "
                      f"{rated['ratio_90pct']} within 5 % {rated['within_5pct']} sure {rated['sure']} "
                      f"knee+2 {rated['at_most_knee_plus_2']}")
        if verdict:
            print(f"-- judge: {verdict['rounds']} rounds, {verdict['processes_per_count']} processes a count, best "
                  f"{verdict['best']} knee {verdict['knee']}; per process {verdict['per_process']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
