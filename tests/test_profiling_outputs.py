"""Unit tests for the output side of profiling/: sampler, plots, HTML, compare and sweep helpers.

Fast and self-contained: reports are built by hand from records.py, so these do not depend on
the analysis stages or on a training run (the end-to-end tests are in test_profiling_run.py).
"""
from __future__ import annotations

import base64
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import pandas as pd
import pytest

from profiling.compare import compare_phases
from profiling.html import render_html
from profiling.plots import write_plots
from profiling.records import LINE_COLUMNS, Advice, JobFacts, Report
from profiling.argv import flag_value, strip_flags
from profiling.runner import declared_default, output_stem, script_num_workers
from profiling.sampling import SAMPLE_COLUMNS, Sampler
from profiling.sweep import (Setting, compute_drift, loop_times, median_of_repeats, pick_knee, read_metrics,
                             repeat_spread, run_local, settings_for)


def hand_report(tmp_path: Path, with_samples: bool = True, data_wait: float = 3.2) -> Report:
    lines = pd.DataFrame([
        ("m.py", "train", 10, 101, data_wait, data_wait * 10, 60.0, "for data, target in train_loader:", "data_wait"),
        ("m.py", "train", 11, 100, 0.3, 3.0, 5.0, "data = data.to(device)", "host_to_device"),
        ("m.py", "train", 12, 100, 1.0, 10.0, 20.0, "output = model(data)  # if a < b & c: <b>", "forward"),
        ("m.py", "train", 13, 100, 0.8, 8.0, 15.0, "loss.backward()", "backward"),
    ], columns=list(LINE_COLUMNS))
    seconds = [data_wait, 0.3, 1.0, 0.8]
    phases = pd.DataFrame({"phase": ["data_wait", "host_to_device", "forward", "backward"], "seconds": seconds,
                           "pct": [100 * s / sum(seconds) for s in seconds],
                           "per_batch_ms": [10 * s for s in seconds]})
    samples = None
    if with_samples:
        samples = pd.DataFrame({"time_s": [1.0, 2.0, 3.0] * 2, "device": ["cpu"] * 3 + ["gpu0"] * 3,
                                "util_pct": [50, 60, 55, 20, 30, 25],
                                "mem_used_mib": [800, 900, 950, 1e3, 1.2e3, 1.2e3],
                                "cores_busy": [1, 1.2, 1.1] + [math.nan] * 3})
    return Report(tmp_path / "x.lprof", lines, phases, JobFacts(4, 1, 1, source="hand-made"),
                  Advice(3, 4, ["data wait 32 ms per batch > compute 21 ms"],
                         ["#SBATCH --cpus-per-task=4", "--num-workers 3"], ["more_workers"]),
                  notes=["<script>alert('x')</script>"], meta={"argv": ["m.py", "--epochs", "1"]},
                  samples=samples)


def test_write_plots_makes_nonblank_pngs(tmp_path):
    paths = write_plots(hand_report(tmp_path), tmp_path, "x")
    assert [p.name for p in paths] == ["x.lines.png", "x.phases.png", "x.utilisation.png"]
    for path in paths:
        pixels = mpimg.imread(path)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 400
        assert pixels[..., :3].std() > 0.05, f"{path.name} looks blank"


def test_no_utilisation_plot_without_samples(tmp_path):
    paths = write_plots(hand_report(tmp_path, with_samples=False), tmp_path, "y")
    assert [p.name for p in paths] == ["y.lines.png", "y.phases.png"]


def test_html_is_self_contained_and_escaped(tmp_path):
    report = hand_report(tmp_path)
    page = render_html(report, write_plots(report, tmp_path, "x"))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "if a &lt; b &amp; c: &lt;b&gt;" in page
    uris = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(uris) == 3 and all(base64.b64decode(u).startswith(b"\x89PNG") for u in uris)
    assert "src='http" not in page and "href=" not in page  # nothing to fetch
    assert "#SBATCH --cpus-per-task=4" in page and "--num-workers 3" in page


def test_sampler_counts_child_processes_and_says_no_gpu(tmp_path):
    # Two grandchildren burn 1 CPU-second each (fixed work, so a loaded machine only makes it
    # slower); the child itself only waits, then lingers so the reaped time can be sampled.
    burn = "import multiprocessing as m, time\n" \
           "def b():\n  while time.process_time() < 1.0: pass\n" \
           "if __name__ == '__main__':\n  ps = [m.Process(target=b) for _ in range(2)]\n" \
           "  [p.start() for p in ps]; [p.join() for p in ps]; time.sleep(1.5)\n"
    child = subprocess.Popen([sys.executable, "-c", burn])
    with Sampler(child.pid, interval=0.5) as sampler:
        child.wait()
    frame = pd.read_csv(sampler.write(tmp_path / "samples.csv"))
    assert list(frame.columns) == list(SAMPLE_COLUMNS)
    cpu = frame[frame["device"] == "cpu"]
    assert len(cpu) >= 3
    cpu_seconds = (cpu["cores_busy"] * cpu["time_s"].diff().fillna(cpu["time_s"].iloc[0])).sum()
    assert cpu_seconds == pytest.approx(2.0, abs=0.4)  # both grandchildren, nothing counted twice
    if not any(frame["device"].str.startswith("gpu")):
        assert sampler.message.startswith("GPU sampling off")


def test_compare_phases_per_batch_and_overall():
    before = pd.DataFrame({"phase": ["data_wait", "forward"], "seconds": [8.0, 2.0], "pct": [80, 20],
                           "per_batch_ms": [80.0, 20.0]})
    after = pd.DataFrame({"phase": ["data_wait", "forward"], "seconds": [1.0, 2.0], "pct": [33, 67],
                          "per_batch_ms": [10.0, 20.0]})
    table, unit = compare_phases(before, after)
    assert unit == "ms per batch"
    got = dict(zip(table["phase"], table["speedup"]))
    assert got["data_wait"] == pytest.approx(8.0) and got["forward"] == pytest.approx(1.0)
    assert got["overall"] == pytest.approx(100 / 30)
    table, unit = compare_phases(before.assign(per_batch_ms=math.nan), after)
    assert unit == "seconds" and dict(zip(table["phase"], table["speedup"]))["overall"] == pytest.approx(10 / 3)


def test_knee_is_fewest_workers_within_five_percent():
    results = pd.DataFrame({"workers": [0, 1, 2, 4, 8], "images_per_sec": [100, 300, 960, 1000, 990]})
    assert pick_knee(results) == 2
    assert pick_knee(results.assign(images_per_sec=[100, 300, 940, 1000, 990])) == 4
    assert pick_knee(results.assign(images_per_sec=math.nan)) is None


def test_each_pass_of_a_sweep_takes_the_counts_in_a_rotated_order(tmp_path):
    """A drift inside each pass favours whichever count runs last; rotated, every count runs early and late."""
    settings = settings_for(["train.py", "--epochs", "1"], [2, 4, 8, 12], tmp_path, 1, 50, repeats=3)
    assert [s.workers for s in settings] == [2, 4, 8, 12, 4, 8, 12, 2, 8, 12, 2, 4]
    assert [s.log.parent.parent.name for s in settings[::4]] == [tmp_path.name, "repeat2", "repeat3"]
    assert all(s.log.parent.name == f"w{s.workers}" for s in settings)  # each run keeps its own folder


def test_a_sweep_writes_each_run_to_runs_csv_before_the_next_starts(tmp_path):
    """A sweep stopped by its time limit keeps what it measured: the second run reads the first's row."""
    runs = tmp_path / "runs.csv"
    check = (f"import csv, sys; rows = list(csv.DictReader(open({str(runs)!r})))\n"
             "sys.exit(0 if [r['workers'] for r in rows] == ['1'] else 3)")
    settings = [Setting(w, [sys.executable, "-c", code], tmp_path / f"w{w}.json", tmp_path / f"w{w}.log", w + 1)
                for w, code in ((1, "pass"), (2, check))]
    rows = run_local(settings, runs)
    assert "exit code" not in rows[1]["detail"]  # the check found exactly the first run in runs.csv
    assert "no usable metrics" in rows[1]["detail"]  # (neither run wrote metrics: failed, and said so)
    assert pd.read_csv(runs)["workers"].tolist() == [1, 2]


def test_median_of_repeats_keeps_one_row_per_setting_and_failures_only_when_nothing_ran():
    rows = [{"workers": 1, "cpus": 2, "images_per_sec": math.nan, "epoch_seconds": math.nan,
             "status": "failed", "detail": "boom"},
            {"workers": 1, "cpus": 2, "images_per_sec": 50.0, "epoch_seconds": 2.0, "status": "ok", "detail": "a"},
            {"workers": 1, "cpus": 2, "images_per_sec": 90.0, "epoch_seconds": 1.0, "status": "ok", "detail": "c"},
            {"workers": 1, "cpus": 2, "images_per_sec": 60.0, "epoch_seconds": 1.5, "status": "ok", "detail": "d"},
            {"workers": 0, "cpus": 1, "images_per_sec": 40.0, "epoch_seconds": 3.0, "status": "ok", "detail": "b"},
            {"workers": 2, "cpus": 3, "images_per_sec": math.nan, "epoch_seconds": math.nan,
             "status": "failed", "detail": "no metrics"}]
    kept = median_of_repeats(rows).to_dict("records")
    assert [r["workers"] for r in kept] == [0, 1, 2]
    assert {k: v for k, v in kept[0].items() if k in rows[4]} == rows[4]  # one run: kept as it is
    assert (kept[1]["images_per_sec"], kept[1]["epoch_seconds"], kept[1]["status"]) == (60.0, 1.5, "ok")
    assert math.isnan(kept[1]["compute_ms"])  # rows without the loop's times: NaN, never a made-up number
    assert kept[1]["detail"] == "median of 3 runs; first: a"  # the failed repeat is left out, and said
    assert kept[2]["status"] == "failed" and kept[2]["detail"] == "no metrics"


def test_a_run_of_two_epochs_or_more_is_timed_on_the_epochs_after_the_first(tmp_path):
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"images_per_sec": 100.0, "epoch_seconds": [4.0, 2.0, 3.0],
                                   "epoch_images": [300, 300, 300]}))
    assert read_metrics(metrics) == (600 / 5.0, 2.5)
    for whole_run in ({"epoch_seconds": [4.0]}, {"epoch_seconds": [4.0, 2.0]},  # one epoch; no images per epoch
                      {"epoch_seconds": [4.0, 0.0], "epoch_images": [300, 0]}):  # the second epoch never ran
        metrics.write_text(json.dumps({"images_per_sec": 100.0, **whole_run}))
        assert read_metrics(metrics)[0] == 100.0


def test_the_loops_compute_and_wait_per_batch_come_from_the_warm_epochs_or_the_hook(tmp_path):
    """A kit script's metrics: warm epochs 2 and 3, 300 images each in batches of 64 (5 steps each):
    (2.0 + 3.0 - 0.5 - 0.5) s over 10 steps = 400 ms compute, 100 ms wait per batch. The hook's record
    of any other script: its own timed steps, less their wait."""
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"epoch_seconds": [4.0, 2.0, 3.0], "epoch_data_wait_seconds": [1.0, 0.5, 0.5],
                                   "epoch_images": [300, 300, 300], "settings": {"batch_size": 64}}))
    assert loop_times(metrics) == pytest.approx((400.0, 100.0))
    metrics.write_text(json.dumps({"epoch_seconds": [4.0], "epoch_images": [300]}))  # no wait, no batch size
    assert all(math.isnan(v) for v in loop_times(metrics))
    loaders = tmp_path / "loaders.json"
    loaders.write_text(json.dumps({"loaders": [{"batches": 16, "loop_steps": 14, "loop_seconds": 0.35,
                                                "loop_wait_seconds": 0.07}]}))
    assert loop_times(loaders) == pytest.approx((20.0, 5.0))
    loaders.write_text(json.dumps({"loaders": [{"batches": 3, "loop_steps": 2, "loop_seconds": 0.1,
                                                "loop_wait_seconds": 0.0}]}))
    assert all(math.isnan(v) for v in loop_times(loaders))  # too few steps to stand for the loop


def test_the_sweep_says_how_the_loops_compute_moved_past_the_knee():
    results = pd.DataFrame({"workers": [2, 4, 8], "compute_ms": [5.0, 5.1, 6.0]})
    assert compute_drift(results, 4) == ["loop compute per batch: 5.10 ms at the knee, 6.00 ms at num_workers=8 "
                                         "(+18%: what the extra workers took from the loop)"]
    assert compute_drift(results, 8) == [] and compute_drift(results.assign(compute_ms=math.nan), 4) == []


def test_the_spread_of_repeats_names_the_noisiest_setting():
    row = {"cpus": 2, "epoch_seconds": 1.0, "status": "ok", "detail": ""}
    rows = [{**row, "workers": 1, "images_per_sec": 100.0}, {**row, "workers": 2, "images_per_sec": 180.0},
            {**row, "workers": 1, "images_per_sec": 104.0}, {**row, "workers": 2, "images_per_sec": 200.0},
            {**row, "workers": 4, "images_per_sec": math.nan, "status": "failed"}]
    assert repeat_spread(rows).startswith("repeats: runs of one setting differed by up to 11% (num_workers=2)")
    assert repeat_spread(rows[-1:]) == "repeats: no setting produced a number"


def test_argument_helpers(tmp_path):
    args = ["--epochs", "1", "--num-workers", "3", "--metrics-json=m.json", "--num-workers=4"]
    assert flag_value(args, "--num-workers") == "4"
    assert strip_flags(args, ("--num-workers", "--metrics-json")) == ["--epochs", "1"]
    script = tmp_path / "s.py"
    script.write_text("import argparse\np = argparse.ArgumentParser()\n"
                      "p.add_argument('--num-workers', type=int, default=2)\n")
    assert declared_default(script, "--num-workers") == 2
    assert script_num_workers(script, [], cpus=8)[0] == 2
    assert script_num_workers(script, ["--num-workers", "auto"], cpus=8)[0] == 7
    assert output_stem("dir/train.py", {}) == "train"
    assert output_stem("train.py", {"SLURM_JOB_ID": "42"}) == "42"
    assert output_stem("train.py", {"SLURM_JOB_ID": "43", "SLURM_ARRAY_JOB_ID": "40",
                                    "SLURM_ARRAY_TASK_ID": "3"}) == "43"
