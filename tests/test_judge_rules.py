"""benchmarks/judge_rules.py: both num_workers rules judged on the stored GPU runs of advice v2.

The tallies are the ones docs/results.md and docs/profiling-model.md cite for making the paced curve
`run`'s default; a change to `profiling.curve.choose_workers` that moves them must update those
pages (and this test) with the new numbers.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("text, message", [
    (None, "No such file"),
    ("{not json", "Expecting property name"),
    ('[{"id": "x", "compute_ms": 3.0}]', "run 0 is not a stored run"),
    ('{"id": "x"}', "run 0 is not a stored run"),
])
def test_bad_runs_files_are_one_line_and_exit_2(tmp_path, text, message):
    path = tmp_path / "runs.json"
    if text is not None:
        path.write_text(text)
    done = judge("--runs", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
