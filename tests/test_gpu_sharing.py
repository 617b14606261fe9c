"""Lesson 10's GPU-sharing pieces on the CPU: the arithmetic, real side-by-side processes, the smoke mode.

The GPU numbers come from `benchmarks/gpu_sharing.py` on a GPU machine; here the same code path
runs with --quick (tiny CPU jobs, MPS skipped), so a renamed flag or a broken table fails in CI.
"""
from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys
import time

import pytest

from multi_gpu import sharing


def _env(repo) -> dict[str, str]:
    return {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}


def test_cpu_shares_are_even_and_disjoint_or_round_robin():
    assert sharing.cpu_shares(2, [0, 1, 2, 3, 4]) == [[0, 1], [2, 3]]
    assert sharing.cpu_shares(1, [3, 5]) == [[3, 5]]
    assert sharing.cpu_shares(4, [0, 1]) == [[0], [1], [0], [1]]  # more jobs than CPUs: they share


def test_window_rate_counts_only_the_steps_inside_the_other_jobs_window():
    ends = [10.5, 11.0, 11.5, 12.0, 12.5, 13.0]
    assert sharing.window_rate(ends, 32, 11.0, 12.0) == pytest.approx(2 * 32 / 1.0)  # 11.5 and 12.0
    assert sharing.window_rate(ends, 32, 12.0, 12.0) is None


def test_overlap_is_the_shared_share_of_the_average_job():
    assert sharing.overlap([(0.0, 10.0), (0.0, 10.0)]) == 1.0
    assert sharing.overlap([(0.0, 10.0), (5.0, 15.0)]) == pytest.approx(0.5)
    assert sharing.overlap([(0.0, 1.0), (2.0, 3.0)]) == 0.0


def test_run_together_runs_at_once_on_own_cpus_and_reports_each_exit(tmp_path):
    probe = ("import os, sys, time; print(sorted(os.sched_getaffinity(0)), time.time(), flush=True); "
             "time.sleep(1); sys.exit(int(sys.argv[1]))")
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    cpus = sharing.cpu_shares(2)
    started = time.monotonic()
    codes = sharing.run_together([[sys.executable, "-c", probe, "0"], [sys.executable, "-c", probe, "3"]],
                                 logs, cpus, {"X": "1"})
    assert codes == [0, 3]
    assert time.monotonic() - started < 1.9  # side by side, not one after the other
    for log, mine in zip(logs, cpus):
        assert log.read_text().split("]")[0] + "]" == str(mine)


def test_sampler_without_nvml_says_why_and_measures_nothing():
    with sharing.GpuSampler() as sampler:
        pass
    if sampler.problem is None:
        pytest.skip("NVML works here: this machine has a GPU")
    assert sampler.problem.startswith("GPU utilisation not sampled") and sampler.mean_utilisation() is None


@pytest.mark.parametrize("argv, fragment", [
    (["pack", "--counts", "0"], "0 is not a positive job count"),
    (["fgbg", "--caps", "150"], "150 is not a percentage from 1 to 100"),
    (["pack"], "no CUDA GPU is visible; use --quick"),
])
def test_bad_arguments_one_line_exit_2(argv, fragment, python_exe, repo, tmp_path):
    import torch

    if argv == ["pack"] and torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    out = subprocess.run([python_exe, str(repo / "benchmarks" / "gpu_sharing.py"), *argv, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=_env(repo))
    assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.slow
def test_quick_pack_runs_the_gpu_code_path_on_cpu(python_exe, repo, tmp_path):
    out = subprocess.run([python_exe, str(repo / "benchmarks" / "gpu_sharing.py"), "pack", "--quick", "--jobs",
                          "resnet18", "--counts", "2", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env=_env(repo))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "MPS: skipped (--quick runs on the CPU)" in out.stdout
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [(r["mode"], r["jobs"]) for r in rows] == [("plain", 1), ("plain", 2)]
    assert len(rows[1]["per_job_images_per_sec"]) == 2 and rows[0]["vs_one_alone"] == 1.0
    assert sorted(p.name for p in tmp_path.glob("pack-*.log")) == [
        "pack-resnet18-plain-n1-job0.log", "pack-resnet18-plain-n2-job0.log", "pack-resnet18-plain-n2-job1.log"]
    assert "| resnet18 | plain | 2 |" in (tmp_path / "summary.md").read_text()


def test_mps_daemon_is_started_private_and_always_stopped(tmp_path, monkeypatch):
    """The lifecycle, with a stand-in for nvidia-cuda-mps-control (this machine has no GPU): started
    with its own pipe and log folders, and sent `quit` even when the block fails."""
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "bin" / sharing.MPS_CONTROL
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/bash\nin=""; [[ "$*" == "-d" ]] || in=$(cat)\n'
                    f'echo "args=$* stdin=$in pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY" >> {calls}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    with pytest.raises(RuntimeError, match="a job failed"):
        with sharing.MpsDaemon() as mps:
            folder = mps.folder
            assert Path(mps.env["CUDA_MPS_PIPE_DIRECTORY"]).is_dir()
            raise RuntimeError("a job failed")
    start, stop = calls.read_text().splitlines()
    assert start == f"args=-d stdin= pipe={folder}/pipe log={folder}/log"
    assert stop == f"args= stdin=quit pipe={folder}/pipe log={folder}/log"
    assert not folder.exists()
