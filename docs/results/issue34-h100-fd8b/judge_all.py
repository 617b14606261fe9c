"""Judge this folder's four cut judges from their windows with benchmarks/rotation_judge.judge, the advice read from
the device's printed profiles (device-output.txt: their report files did not come back), and write each judge.json.
From the repo root: python docs/results/issue34-h100-fd8b/judge_all.py
"""
import json
import re
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))
from rotation_judge import judge  # noqa: E402

NODE = HERE / "h100-fd8b02ff"
printed = (NODE / "device-output.txt").read_text()
for windows in sorted(NODE.glob("*/judge/windows.csv")):
    style = windows.parts[-3]
    advice = int(re.search(rf"^{style} profiled .*num_workers = (\d+)", printed, re.M).group(1))
    table = pd.read_csv(windows)
    verdict = {**judge(table, advice), "persistent_workers": True, "written_by": "judge_all.py"}
    (windows.parent / "judge.json").write_text(json.dumps(verdict, indent=1) + "\n")
    print(f"{style:14} rounds {table['round'].nunique()}  processes {verdict['processes_per_count']}  best "
          f"{verdict['best']:2}  knee {verdict['knee']:2}  advice {advice:2}  {verdict['ratio']} {verdict['ratio_90pct']}"
          f"  within 5 % {verdict['within_5pct']!s:5} sure {verdict['sure']!s:5}  knee+2 {verdict['at_most_knee_plus_2']}")
