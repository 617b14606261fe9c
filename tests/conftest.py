"""Shared fixtures.

Tests that need the local Slurm sandbox take the `slurm` fixture. Outside CI they skip with a
visible reason when no controller answers; with CI=true they fail, so a broken sandbox can never
turn a red run green by skipping. The fixture's value is a small client for submitting a job,
waiting for it and reading its accounting record, so that each test does not reinvent polling.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def run(*cmd: str, timeout: float = 30, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a command with extra environment. Every Slurm client blocks for minutes when the
    controller is down, hence the timeout: a dead sandbox fails a test, it never hangs it."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **env})


class Slurm:
    """Submit, wait, account: the three things a job test does."""

    def submit(self, *sbatch_args: str, cwd: Path | None = None) -> str:
        """`sbatch --parsable ARGS...`; returns the job id (fails the test if sbatch refuses)."""
        done = subprocess.run(["sbatch", "--parsable", *sbatch_args], cwd=cwd, capture_output=True,
                              text=True, timeout=30, check=False)
        assert done.returncode == 0, f"sbatch {' '.join(sbatch_args)}: {done.stderr.strip()}"
        return done.stdout.strip().split(";")[0]

    def wait(self, job_id: str, limit: float = 120) -> None:
        """Poll squeue every 0.1 s until the job has left the queue. (`sbatch --wait` polls
        every 2, then 8, then 32 s, which makes short jobs look slow.)"""
        deadline = time.monotonic() + limit
        while run("squeue", "-h", "-j", job_id).stdout.strip():
            if time.monotonic() > deadline:
                run("scancel", job_id)
                pytest.fail(f"job {job_id} still queued after {limit} s (cancelled)")
            time.sleep(0.1)

    def sacct(self, job_id: str, fields: str = "JobID,JobName,State,ExitCode,Elapsed,AllocTRES,MaxRSS",
              limit: float = 15) -> dict[str, dict[str, str]]:
        """The job's records as {JobID: {field: value}}, steps included ("12.batch").

        slurmdbd gets a finished job's record in pieces (a step may arrive before the job, under
        the placeholder name "allocation"), so poll until the job's line has a final state and a
        real name."""
        deadline = time.monotonic() + limit
        while True:
            out = run("sacct", "-P", "-j", job_id, "-o", fields).stdout
            header, *rows = out.strip().splitlines() or [""]
            records = {row.split("|")[0]: dict(zip(header.split("|"), row.split("|"))) for row in rows}
            job = records.get(job_id, {})
            settled = job.get("State", "PENDING") not in {"PENDING", "RUNNING", "COMPLETING"}
            if (settled and job.get("JobName", "") != "allocation") or time.monotonic() > deadline:
                return records
            time.sleep(0.3)


def _slurm_problem() -> str | None:
    """Why the sandbox is unusable, or None when a controller answers and a node is up."""
    if shutil.which("sinfo") is None:
        return "sinfo not found: start the sandbox with `make slurm-up`"
    try:
        out = run("sinfo", "-h", "-o", "%t", timeout=10)
    except subprocess.TimeoutExpired:
        return "sinfo timed out: the Slurm controller is not answering (`make slurm-up`)"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip() or out.stdout.strip()}"
    states = out.stdout.split()
    # A trailing "*" means the node stopped answering the controller.
    if not any(s.startswith(("idle", "mix", "alloc", "comp")) and not s.endswith("*") for s in states):
        return f"no usable Slurm node (states: {states or 'none'})"
    return None


@pytest.fixture(scope="session")
def slurm() -> Slurm:
    """Require the real local Slurm: skip outside CI, fail in CI."""
    problem = _slurm_problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"Slurm sandbox required in CI: {problem}", pytrace=False)
        pytest.skip(f"Slurm sandbox not available: {problem}")
    return Slurm()


@pytest.fixture(scope="session")
def shellcheck() -> str:
    """Path of shellcheck (`make system-deps` installs it): skip outside CI, fail in CI."""
    path = shutil.which("shellcheck")
    if path is None:
        if IN_CI:
            pytest.fail("shellcheck missing: `make system-deps` installs it", pytrace=False)
        pytest.skip("shellcheck not installed (make system-deps)")
    return path


@pytest.fixture(scope="session")
def python_exe() -> str:
    """The interpreter running the tests: jobs and subprocesses must use the same venv."""
    return sys.executable


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
