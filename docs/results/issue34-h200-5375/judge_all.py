"""Judge this folder's five cut judges from their windows with benchmarks/rotation_judge.judge, the advice read
from each style's run.report.json, and write each judge.json.
From the repo root: python docs/results/issue34-h200-5375/judge_all.py
"""
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))
from rotation_judge import judge  # noqa: E402

for windows in sorted((HERE / "h200-53753b43").glob("*/judge/windows.csv")):
    style = windows.parts[-3]
    advice = json.loads((windows.parents[1] / "run.report.json").read_text())["advice"]["num_workers"]
    table = pd.read_csv(windows)
    v = {**judge(table, advice), "persistent_workers": True, "written_by": "judge_all.py"}
    (windows.parent / "judge.json").write_text(json.dumps(v, indent=1) + "\n")
    print(f"{style:14} rounds {table['round'].nunique()}  processes {v['processes_per_count']}  best {v['best']:2}"
          f"  knee {v['knee']:2}  advice {advice:2}  {v['ratio']} {v['ratio_90pct']}  within 5 % {v['within_5pct']!s:5}"
          f" sure {v['sure']!s:5}  knee+2 {v['at_most_knee_plus_2']}")
