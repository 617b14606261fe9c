"""Each judge of this folder again from its windows, with today's benchmarks/rotation_judge.judge (its interval
draws each count's processes as well as its rounds), beside the verdict the device printed. The cpu_mixup judge
with three processes per count (run with --persistent, as every judge here but judge-plain/) hit its time limit after
seven whole rounds: its judge.json is written here. Another folder laid out alike (NODE/STYLE/judge*/windows.csv)
is judged the same way when named.
From the repo root: python docs/results/issue34-judge-persistent/rejudge.py [FOLDER]
"""
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))
from rotation_judge import judge  # noqa: E402

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
for windows in sorted(ROOT.glob("h[12]00-*/*/judge*/windows.csv")):
    folder = windows.parent
    advice = json.loads((folder.parent / "run.report.json").read_text())["advice"]["num_workers"]
    again = judge(pd.read_csv(windows), advice)
    printed = folder / "judge.json"
    first = json.loads(printed.read_text()) if printed.exists() else None
    if first is None:
        written = {**again, "persistent_workers": True, "written_by": "rejudge.py"}
        printed.write_text(json.dumps(written, indent=1) + "\n")
    printed_by_device = first is not None and "written_by" not in first
    was = f"printed {first['ratio']} {first['ratio_90pct']}" if printed_by_device else "none printed (time limit)"
    print(f"{folder.relative_to(ROOT)!s:42} processes {again['processes_per_count']}  best {again['best']:2}  knee "
          f"{again['knee']:2}  advice {advice:2}  {again['ratio']} {again['ratio_90pct']} sure {again['sure']!s:5}  "
          f"knee+2 {again['at_most_knee_plus_2']!s:5}  ({was})")
