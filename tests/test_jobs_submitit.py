"""The submitit launcher (`python -m jobs submit`) on the local Slurm sandbox: a single run,
a small num_workers sweep, a two-rank DDP run, and a failing run that must come back as one
clear line."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slurm

TINY = ["--synthetic", "--train-samples", "512", "--test-samples", "256", "--epochs", "1", "--max-steps", "4"]


def launch(python_exe: str, repo: Path, site: Path, folder: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([python_exe, "-m", "jobs", "submit", *args[:-1], "--folder", str(folder), "--",
                             *args[-1]], cwd=repo, env={**os.environ, "DLKIT_SITE_ENV": str(site)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_single_run_sweep_ddp_and_failure_through_submitit(slurm, tmp_path, python_exe, repo):
    site = tmp_path / "site.env"
    site.write_text(f"export SBATCH_PARTITION=debug\nDLKIT_DATA_DIR={tmp_path / 'data'}\n")
    # Four launchers at once: the sandbox runs what fits on its two CPUs and queues the rest.
    single = launch(python_exe, repo, site, tmp_path / "single", "single", "--cpus", "2", TINY)
    # CPU-only settings: the kit's CPU rule gives W + 1 CPUs (a GPU setting would need W + 2, more than
    # the sandbox's two CPUs for one worker)
    sweep = launch(python_exe, repo, site, tmp_path / "sweep", "sweep", "--workers", "0,1", "--gpus", "0", TINY)
    ddp = launch(python_exe, repo, site, tmp_path / "ddp", "ddp", "--gpus", "2", "--mem-gb", "4", TINY)
    broken = launch(python_exe, repo, site, tmp_path / "broken", "single", ["--data-dir", str(tmp_path / "none")])
    outputs = {name: proc.communicate(timeout=300) for name, proc in
               (("single", single), ("sweep", sweep), ("ddp", ddp), ("broken", broken))}

    assert single.returncode == 0, outputs["single"]
    [row] = pd.read_csv(tmp_path / "single" / "results.csv").to_dict("records")
    # 2 CPUs for a 1-GPU job: both stay with the main process (the kit's CPU rule), so 0 workers
    assert (row["status"], row["state"], row["num_workers"], row["cpus_allowed"], row["steps"]) == (
        "ok", "COMPLETED", 0, 2, 4)
    assert row["images_per_sec"] > 0

    assert sweep.returncode == 0, outputs["sweep"]
    table = pd.read_csv(tmp_path / "sweep" / "sweep.csv")
    assert list(table["workers"]) == [0, 1] and list(table["cpus"]) == [1, 2]
    assert set(table["status"]) == {"ok"} and (table["images_per_sec"] > 0).all()
    assert (tmp_path / "sweep" / "sweep.png").stat().st_size > 0
    assert "knee: num_workers=" in outputs["sweep"][0]

    assert ddp.returncode == 0, outputs["ddp"]
    [row] = pd.read_csv(tmp_path / "ddp" / "results.csv").to_dict("records")
    # submitit's TorchDistributedEnvironment made the two tasks one world; 1 CPU each, so 0 workers.
    assert (row["status"], row["world_size"], row["num_workers"], row["steps"]) == ("ok", 2, 0, 4)

    assert broken.returncode == 1, outputs["broken"]
    [line] = [x for x in outputs["broken"][1].splitlines() if x.startswith("dljobs submit: job failed:")]
    assert "FAILED" in line and "MNIST not found" in line and "log:" in line
    assert "Traceback" not in outputs["broken"][1]


def test_a_job_sbatch_refuses_is_one_line_and_exit_2(slurm, tmp_path, python_exe, repo):
    site = tmp_path / "site.env"
    site.write_text("export SBATCH_PARTITION=debug\n")
    out = launch(python_exe, repo, site, tmp_path / "big", "single", "--cpus", "64", ["--synthetic"])
    stdout, stderr = out.communicate(timeout=120)
    assert out.returncode == 2 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("dljobs submit: error: sbatch refused the single run")
