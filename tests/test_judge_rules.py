"""benchmarks/judge_rules.py: both num_workers rules judged on the stored GPU runs of advice v2.

The tallies are the ones docs/results.md and docs/profiling-model.md cite for making the paced curve
`run`'s default; a change to `profiling.curve.choose_workers` that moves them must update those
pages (and this test) with the new numbers.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def judge(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "judge_rules.py"), *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_the_stored_runs_give_the_tallies_the_docs_cite():
    done = judge("--margins", "1.5,2")
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): [int(c) for c in line.split("|")[2:-1]]
            for line in done.stdout.splitlines() if line.startswith(("| margin", "| paced"))}
    #                  runs, within 5 %, <= knee + 2, both, CPUs saved
    assert rows == {"margin 1.5": [43, 27, 40, 26, 197], "margin 2": [43, 30, 25, 20, 116],
                    "paced": [43, 32, 40, 31, 169]}
    # every interleaved run with its reports kept (H100 H kept none for small files) is judged
    assert done.stdout.count("| interleaved-sweep/") == 16


def test_a_missing_runs_file_is_one_line_and_exit_2(tmp_path):
    done = judge("--runs", str(tmp_path / "none.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "none.json" in done.stderr
