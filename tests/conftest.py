"""Shared fixtures.

Tests that need the local Slurm sandbox use the `slurm` fixture. Outside CI they skip with a
visible reason when no controller answers; with CI=true they fail, so a broken sandbox can
never turn a red run green by skipping.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _slurm_problem() -> str | None:
    """Why the sandbox is unusable, or None when a controller answers and a node is up."""
    if shutil.which("sinfo") is None:
        return "sinfo not found: start the sandbox with `make slurm-up`"
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        return "sinfo timed out: the Slurm controller is not answering (`make slurm-up`)"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip() or out.stdout.strip()}"
    states = out.stdout.split()
    if not any(s.startswith(("idle", "mix", "alloc")) for s in states):
        return f"no usable Slurm node (states: {states or 'none'})"
    return None


@pytest.fixture(scope="session")
def slurm() -> None:
    """Require the real local Slurm: skip outside CI, fail in CI."""
    problem = _slurm_problem()
    if problem is None:
        return
    if IN_CI:
        pytest.fail(f"Slurm sandbox required in CI: {problem}", pytrace=False)
    pytest.skip(f"Slurm sandbox not available: {problem}")


@pytest.fixture(scope="session")
def python_exe() -> str:
    """The interpreter running the tests: jobs and subprocesses must use the same venv."""
    return sys.executable


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
