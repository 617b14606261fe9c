"""The job templates, submitted for real to the local Slurm sandbox.

Every job runs on the sandbox's fake GPUs (`--gres=gpu:N` is scheduled, the code falls back to
the CPU) with tiny settings, and each test asserts on the files the job really wrote. Jobs are
sized at one or two CPUs because the machine has two. The many-node template gets
`sbatch --test-only` here; it runs for real on the two-node cluster in tests/test_two_nodes.py.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Slurm
from profiling.cpu_rule import cpus_for_workers, workers_for_cpus

pytestmark = pytest.mark.slurm

TINY = ["--synthetic", "--train-samples", "512", "--test-samples", "256"]
SQUEUE_POLL = 0.2


# ---------------------------------------------------------------- helpers
def write_site(folder: Path, python_exe: str, data: Path) -> Path:
    """A site file for the sandbox: this venv, a private data dir, the partition set through
    SBATCH_PARTITION (so the submit-time half of the site file is exercised too)."""
    site = folder / "site.env"
    site.write_text(f"export SBATCH_PARTITION=debug\nDLKIT_VENV={Path(python_exe).parents[1]}\n"
                    f"DLKIT_DATA_DIR={data}\n")
    return site


def submit(ctx: dict, *args: str, env: dict | None = None) -> str:
    """`dljobs sbatch --parsable ARGS` from the test's folder; returns the job id."""
    out = subprocess.run([ctx["python"], "-m", "jobs", "sbatch", "--parsable", *args], cwd=ctx["cwd"],
                         env={**os.environ, "DLKIT_SITE_ENV": str(ctx["site"]), **(env or {})},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"submission failed: {out.stderr}"
    return out.stdout.strip().split(";")[0]


def in_queue(job_ids: list[str]) -> bool:
    out = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(job_ids)],
                         capture_output=True, text=True, timeout=30)
    return out.returncode == 0 and bool(out.stdout.strip())


def wait_gone(job_ids: list[str], timeout: float) -> None:
    """Poll squeue (sbatch --wait polls every 2 s and then slower; see the sandbox notes)."""
    deadline = time.monotonic() + timeout
    while in_queue(job_ids):
        if time.monotonic() > deadline:
            subprocess.run(["scancel", *job_ids], timeout=30)
            pytest.fail(f"jobs {job_ids} still queued after {timeout} s")
        time.sleep(SQUEUE_POLL)


def job_records(job_id: str) -> list[dict[str, str]]:
    """scontrol's view of a job (one record per array task)."""
    return Slurm().show(job_id)


def log_of(ctx: dict, pattern: str) -> str:
    found = sorted(ctx["cwd"].glob(pattern))
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in found) or f"(no {pattern})"


def assert_completed(ctx: dict, job_id: str, log_pattern: str) -> list[dict[str, str]]:
    records = job_records(job_id)
    states = {r.get("JobState") for r in records}
    assert states == {"COMPLETED"}, f"job {job_id} ended {states}:\n{log_of(ctx, log_pattern)}"
    return records


def metrics(path: Path) -> dict:
    return json.loads(path.read_text())


def final_digest(log: str) -> str:
    digests = re.findall(r"parameters sha256=([0-9a-f]{64})", log)
    assert digests, f"no parameter digest in the log:\n{log[-2000:]}"
    return digests[-1]


@pytest.fixture
def ctx(slurm, tmp_path, python_exe, repo) -> dict:
    data = tmp_path / "data"
    return {"cwd": tmp_path, "python": python_exe, "repo": repo, "data": data,
            "site": write_site(tmp_path, python_exe, data)}


def template(repo: Path, name: str) -> str:
    return str(repo / "jobs" / "templates" / name)


# ---------------------------------------------------------------- lessons 2-3: one GPU
@pytest.mark.slow
def test_profile_then_tuned_jobs_write_lprof_report_and_metrics(ctx):
    profile = submit(ctx, template(ctx["repo"], "profile.sbatch"), *TINY, "--max-steps", "4")
    tuned = submit(ctx, "--cpus-per-task=2", template(ctx["repo"], "tuned.sbatch"), *TINY, "--max-steps", "4")
    wait_gone([profile, tuned], timeout=240)
    assert_completed(ctx, profile, "mnist-profile-*.out")
    assert_completed(ctx, tuned, "mnist-tuned-*.out")

    out = ctx["cwd"] / "runs" / "profile"
    for suffix in (".lprof", ".meta.json", ".report.txt", ".report.json", ".report.html", ".lines.csv"):
        assert (out / f"{profile}{suffix}").is_file(), f"missing {profile}{suffix} in {sorted(out.iterdir())}"
    report = json.loads((out / f"{profile}.report.json").read_text())
    assert "advice" in report and "phases" in report
    log = (ctx["cwd"] / f"mnist-profile-{profile}.out").read_text()
    # The shared context block: host, CPUs allowed, the fake GPU, sorted SLURM_* variables.
    assert "=== job context" in log and "cpus allowed:  1 " in log and "CUDA_VISIBLE_DEVICES=0" in log
    slurm_lines = [line.strip() for line in log.splitlines() if line.startswith("  SLURM_")]
    assert f"SLURM_JOB_ID={profile}" in slurm_lines and "SLURM_JOB_PARTITION=debug" in slurm_lines
    assert slurm_lines == sorted(slurm_lines)
    assert f"=== report ({out}/{profile}.report.txt)" in log

    tuned_metrics = metrics(ctx["cwd"] / "runs" / "tuned" / f"{tuned}.metrics.json")
    # --cpus-per-task=2 on fake GPUs: the script trains on the CPU and pins nothing, so the main
    # process keeps one core and the other is the loader's (the rule dlkit_cpus_for_workers inverts)
    assert tuned_metrics["settings"]["num_workers"] == workers_for_cpus(2, gpus=1, pin_memory=False) == 1
    assert tuned_metrics["settings"]["cpus_allowed"] == 2
    assert tuned_metrics["steps"] == 4 and tuned_metrics["images_per_sec"] > 0
    assert (ctx["cwd"] / "runs" / "tuned" / f"{tuned}.lprof").is_file()


def test_sweep_array_gives_each_task_its_workers_and_cpus_then_gathers(ctx):
    env = {"SWEEP_WORKERS": "0,1"}
    array = submit(ctx, "--array=0-1", "--cpus-per-task=2", template(ctx["repo"], "sweep-array.sbatch"),
                   *TINY, "--max-steps", "4", env=env)
    gather = submit(ctx, f"--dependency=afterany:{array}", template(ctx["repo"], "sweep-gather.sbatch"),
                    array, env=env)
    wait_gone([array, gather], timeout=240)
    assert len(assert_completed(ctx, array, "mnist-sweep-*.out")) == 2
    assert_completed(ctx, gather, "mnist-sweep-gather-*.out")

    folder = ctx["cwd"] / "runs" / f"sweep-{array}"
    for workers in (0, 1):
        settings = metrics(folder / f"w{workers}.json")["settings"]
        # The srun step narrows the task to the kit's CPU rule for its workers, whatever the array
        # asked for: no real GPU here, so nothing is pinned and the main process counts one core.
        expected_cpus = cpus_for_workers(workers, gpus=1, pin_memory=False)
        assert (settings["num_workers"], settings["cpus_allowed"]) == (workers, expected_cpus)
    import pandas as pd

    table = pd.read_csv(folder / "sweep.csv")
    assert list(table["workers"]) == [0, 1] and set(table["status"]) == {"ok"}
    assert (table["images_per_sec"] > 0).all() and list(table["cpus"]) == [1, 2]
    assert (folder / "sweep.png").stat().st_size > 0
    assert "knee: num_workers=" in (folder / "sweep.txt").read_text()


def test_sweep_array_refuses_an_array_that_does_not_match_the_settings(ctx):
    job = submit(ctx, "--array=0-2", "--cpus-per-task=1", template(ctx["repo"], "sweep-array.sbatch"),
                 env={"SWEEP_WORKERS": "0,1"})
    wait_gone([job], timeout=120)
    log = log_of(ctx, "mnist-sweep-*.out")
    assert {r["JobState"] for r in job_records(job)} == {"FAILED"}
    assert "SWEEP_WORKERS has 2 settings but the array has 3 tasks: submit with --array=0-1" in log


# ---------------------------------------------------------------- lesson 10: many tasks, one GPU
@pytest.mark.slow
def test_pack_one_gpu_runs_four_trainings_at_once_one_log_each(ctx, slurm):
    """4 srun --overlap steps in one --gres=gpu:1 job on 2 CPUs: all train, at the same time."""
    job = submit(ctx, "--cpus-per-task=2", "--mem=4G", template(ctx["repo"], "pack-one-gpu.sbatch"), *TINY,
                 "--max-steps", "4", env={"PACK_TASKS": "4"})
    wait_gone([job], timeout=240)
    assert_completed(ctx, job, "mnist-pack-*.out")
    folder = ctx["cwd"] / "runs" / f"pack-{job}"
    assert sorted(p.name for p in folder.glob("task-*.log")) == [f"task-{i}.log" for i in range(1, 5)]
    for i in range(1, 5):
        result = metrics(folder / f"task-{i}.json")
        assert result["steps"] == 4 and result["settings"]["seed"] == i, result
        assert "Train Epoch: 1" in (folder / f"task-{i}.log").read_text()
    steps = {k: v for k, v in slurm.sacct(job, "JobID,JobName,State,Start,End").items()
             if k.split(".")[-1].isdigit() and "." in k}
    assert len(steps) == 4 and {s["State"] for s in steps.values()} == {"COMPLETED"}, steps
    # every step started before any step ended: they ran at once, not one after another
    assert max(s["Start"] for s in steps.values()) <= min(s["End"] for s in steps.values()), steps


# ---------------------------------------------------------------- lesson 5: DDP on one node
@pytest.mark.slow
def test_ddp_node_srun_and_torchrun_variants_train_two_ranks(ctx):
    # Both at once: each needs the sandbox's two CPUs, so Slurm runs them back to back.
    srun_job = submit(ctx, "--cpus-per-task=1", "--mem=4G", template(ctx["repo"], "ddp-node.sbatch"), *TINY,
                      "--max-steps", "3")
    torchrun_job = submit(ctx, "--cpus-per-task=2", "--mem=4G", template(ctx["repo"], "ddp-node-torchrun.sbatch"),
                          *TINY, "--max-steps", "3")
    wait_gone([srun_job, torchrun_job], timeout=300)
    for job, name, folder, launcher in ((srun_job, "mnist-ddp", "ddp", "srun"),
                                        (torchrun_job, "mnist-ddp-torchrun", "ddp-torchrun", "torchrun")):
        assert_completed(ctx, job, f"{name}-{job}.out")
        result = metrics(ctx["cwd"] / "runs" / folder / f"{job}.metrics.json")
        assert (result["world_size"], result["launcher"]) == (2, launcher)
        log = (ctx["cwd"] / f"{name}-{job}.out").read_text()
        digests = set(re.findall(r"parameters sha256=([0-9a-f]{64})", log))
        assert len(re.findall(r"\[rank [01]/2\] parameters", log)) == 2 and len(digests) == 1, log[-2000:]


# ---------------------------------------------------------------- lesson 6: many nodes
def test_many_node_template_is_accepted_by_sbatch_test_only(ctx):
    """The sandbox has one node: --test-only validates every other option of the script."""
    out = subprocess.run(["sbatch", "--test-only", "--nodes=1", "--gres=gpu:2", "--cpus-per-task=2",
                          "--mem=1G", template(ctx["repo"], "ddp-nodes.sbatch")],
                         cwd=ctx["cwd"], capture_output=True, text=True, timeout=30)
    assert "to start at" in out.stderr, out.stderr
    as_written = subprocess.run(["sbatch", "--test-only", template(ctx["repo"], "ddp-nodes.sbatch")],
                                cwd=ctx["cwd"], capture_output=True, text=True, timeout=30)
    assert "to start at" not in as_written.stderr  # 2 nodes x 4 GPUs cannot fit here, and sbatch says so


# ---------------------------------------------------------------- lesson 7: preemption
@pytest.mark.slow
def test_preempted_job_requeues_resumes_and_matches_an_uninterrupted_run(ctx):
    args = ["--synthetic", "--train-samples", "2048", "--test-samples", "256", "--epochs", "2",
            "--seed", "3", "--checkpoint-every", "8"]
    job = submit(ctx, "--cpus-per-task=1", template(ctx["repo"], "preemptible.sbatch"), *args)
    reference = submit(ctx, "--cpus-per-task=1", "--job-name=reference", template(ctx["repo"], "preemptible.sbatch"),
                       *args)
    ckpt = ctx["cwd"] / "runs" / f"preemptible-{job}"
    deadline = time.monotonic() + 180
    while not list(ckpt.glob("*.pt")) and time.monotonic() < deadline:  # first checkpoint: mid-training
        assert in_queue([job]), f"job ended before it could be preempted:\n{log_of(ctx, f'*-{job}.out')}"
        time.sleep(SQUEUE_POLL)
    # What Slurm does at --signal=B:USR1@90: signal the batch shell only.
    subprocess.run(["scancel", "--signal=USR1", "--batch", job], check=True, timeout=30)
    # Start it as soon as it is eligible again (never earlier: that revokes its credential).
    started = subprocess.run(["bash", str(ctx["repo"] / "jobs" / "sandbox" / "start-requeued.sh"), job],
                             capture_output=True, text=True, timeout=150)
    restarted = started.returncode == 0
    wait_gone([job, reference], timeout=240)
    [record] = assert_completed(ctx, job, f"*-{job}.out")
    assert restarted and record["Restarts"] == "1"
    log = (ctx["cwd"] / f"mnist-preemptible-{job}.out").read_text()
    assert "preemptible: USR1" in log and f"requeueing job {job}" in log
    assert "preemptible: restart 1: resuming" in log and "resumed from" in log
    assert "SLURM_RESTART_COUNT=1" in log  # the context block of the second run
    ref_log = (ctx["cwd"] / f"reference-{reference}.out").read_text()
    assert "preemptible: training finished after 0 restart(s)" in ref_log
    assert final_digest(log) == final_digest(ref_log)  # bit-identical weights
    resumed = metrics(ckpt / "metrics.json")
    uninterrupted = metrics(ctx["cwd"] / "runs" / f"preemptible-{reference}" / "metrics.json")
    assert resumed["resumed_from"] and resumed["test_loss"] == uninterrupted["test_loss"]


# ---------------------------------------------------------------- load
LOAD_SCRIPT = """#!/bin/bash
#SBATCH --job-name=load
#SBATCH --output=%x-%A_%a.out
#SBATCH --array=0-49
#SBATCH --cpus-per-task=1
#SBATCH --mem=100M
#SBATCH --time=5
set -euo pipefail
source "${DLKIT_ROOT:-${SLURM_SUBMIT_DIR:-.}}/jobs/lib/job.sh"
out="$(dlkit_runs_dir "load-$SLURM_ARRAY_JOB_ID")"
python - "$out/$SLURM_ARRAY_TASK_ID.json" <<'EOF'
import json, os, sys
task = int(os.environ["SLURM_ARRAY_TASK_ID"])
json.dump({"task": task, "job": os.environ["SLURM_JOB_ID"], "array": os.environ["SLURM_ARRAY_JOB_ID"],
           "square": task * task, "cpus": len(os.sched_getaffinity(0))}, open(sys.argv[1], "w"))
EOF
"""


@pytest.mark.slow
def test_load_fifty_task_array_all_outputs_present_and_correct(ctx):
    script = ctx["cwd"] / "load.sbatch"
    script.write_text(LOAD_SCRIPT)
    array = submit(ctx, str(script))
    wait_gone([array], timeout=240)
    records = assert_completed(ctx, array, "load-*.out")
    assert len(records) == 50
    folder = ctx["cwd"] / "runs" / f"load-{array}"
    results = {int(p.stem): json.loads(p.read_text()) for p in folder.glob("*.json")}
    assert sorted(results) == list(range(50))
    job_ids = set()
    for task, result in results.items():
        assert (result["task"], result["array"], result["square"], result["cpus"]) == (task, array, task * task, 1)
        job_ids.add(result["job"])
        log = (ctx["cwd"] / f"load-{array}_{task}.out").read_text()
        assert "=== job context" in log and f"SLURM_ARRAY_TASK_ID={task}" in log
    assert len(job_ids) == 50  # every task is its own job
