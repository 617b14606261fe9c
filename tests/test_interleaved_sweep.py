"""benchmarks/interleaved_sweep.py: a num_workers sweep in one process, settings taking turns.

The benchmark judges the profiler's advice on GPU nodes; here it runs on the CPU with tiny data: a real
`profiling run` (kernprof) gives the advice, the sweep trains real epochs, and its summary must be what
its own epochs say.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from interleaved_sweep import rotated, summarise  # noqa: E402
from profiling.capture import read_trials  # noqa: E402
from profiling.curve import read_curve  # noqa: E402
from profiling.report import build_report  # noqa: E402

ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, "PYTHONPATH": str(REPO),
       "PYTHON": sys.executable}


def test_each_pass_starts_at_another_setting():
    assert [rotated([2, 4, 8], t) for t in range(4)] == [[2, 4, 8], [4, 8, 2], [8, 2, 4], [2, 4, 8]]


def test_the_summary_drops_the_warm_up_pass_and_pairs_settings_within_a_pass():
    """Pass 0 is slow for every setting and not counted; pass 2 is slow as a whole, and the paired ratio
    compares each pass's epochs with the same pass's best setting."""
    seconds = {0: {1: 9.0, 2: 9.0}, 1: {1: 2.0, 2: 1.0}, 2: {1: 4.0, 2: 3.6}, 3: {1: 2.2, 2: 1.1}}
    epochs = pd.DataFrame([{"pass": p, "workers": w, "seconds": s} for p, row in seconds.items()
                           for w, s in row.items()])
    table, best, knee = summarise(epochs)
    assert best == 2 and knee == 2
    assert table.loc[1, "median"] == pytest.approx(2.2) and table.loc[2, "median"] == pytest.approx(1.1)
    assert table.loc[1, "ratio"] == pytest.approx(2.0)
    assert table.loc[1, "paired_ratio"] == pytest.approx(2.0)  # the passes' ratios: 2.0, 1.11, 2.0
    assert table.loc[2, "spread"] == pytest.approx(3.6 / 1.0) and table.loc[2, "count"] == 3


def test_the_advice_of_a_real_profile_is_swept_and_judged(tmp_path):
    """interleaved_advice.sh: `profiling run --alone` and `run` (three epochs, worker counts tried in its own loop)
    at num_workers=1, then the sweep with both advised k among the settings: two passes of every setting, and
    verdicts on the swept epochs."""
    data = ["--synthetic", "--train-samples", "384", "--test-samples", "64", "--data-dir", str(tmp_path / "data"),
            "--device", "cpu"]
    done = subprocess.run(["bash", str(REPO / "benchmarks" / "interleaved_advice.sh"), str(tmp_path / "ia"), "0,1",
                           "2", "--", "mnist_classify.py", *data], env=ENV, capture_output=True, text=True,
                          timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    advised = {name: build_report(tmp_path / "ia" / folder / "mnist_classify.lprof").advice.num_workers
               for name, folder in (("margin 2", "profile"), ("measured", "measured"))}
    # `run --alone` timed the loader alone (the margin rule); `run` timed its own loop untraced after the first epoch
    assert read_curve(tmp_path / "ia" / "profile" / "mnist_classify.curve.json").hold_ms == 0
    assert read_trials(tmp_path / "ia" / "measured" / "mnist_classify.loaders.json")["traced_batches"] == 6
    epochs = pd.read_csv(tmp_path / "ia" / "sweep" / "epochs.csv")
    settings = sorted({0, 1} | set(advised.values()))
    assert sorted(set(epochs["workers"])) == settings
    assert len(epochs) == 2 * len(settings) and (epochs["seconds"] > 0).all() and (epochs["images"] == 384).all()
    summary = json.loads((tmp_path / "ia" / "sweep" / "summary.json").read_text())
    table, best, knee = summarise(epochs)
    assert (summary["best"], summary["knee"]) == (best, knee)
    for name, k in advised.items():
        rule = summary["rules"][name]
        assert rule["workers"] == k
        assert rule["ratio"] == pytest.approx(table.loc[k, "median"] / table.loc[best, "median"], abs=1e-3)
        assert rule["at_most_knee_plus_2"] == (k <= knee + 2)
    assert "| 1 | " in (tmp_path / "ia" / "sweep" / "summary.md").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--advice", "m=/no/such.lprof", "--", "mnist_classify.py"], "expected NAME=PATH to a .lprof file"),
    (["--passes", "1", "--", "mnist_classify.py"], "--passes: at least 2"),
    (["--", "train.py"], "give one of mnist_classify.py, small_files/train.py"),
    (["--", "small_files/train.py", "--data", "/no/such/folder"], "--data /no/such/folder: no such folder"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, message):
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "interleaved_sweep.py"), "--out",
                           str(tmp_path / "o"), *argv], env=ENV, capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
