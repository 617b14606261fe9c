"""The kit installs as a package: its modules import and its commands start from any folder."""
from __future__ import annotations

import subprocess
from importlib.metadata import distribution
from pathlib import Path

import pytest

# The names that lessons, jobs and tests import from lesson 1 (the shared contract).
MNIST_API = ["Net", "build_parser", "parse_args", "usable_cpus", "resolve_device",
             "load_datasets", "make_loaders", "train", "test", "main"]


def run_python(python_exe: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run away from the checkout, so that only the installed kit can answer."""
    return subprocess.run([python_exe, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_profiling_help(python_exe: str, tmp_path: Path) -> None:
    done = run_python(python_exe, tmp_path, "-m", "profiling", "--help")
    assert done.returncode == 0, done.stderr
    for verb in ("run", "report", "compare", "sweep"):
        assert verb in done.stdout


def test_mnist_classify_imports_with_its_api(python_exe: str, tmp_path: Path) -> None:
    code = f"import mnist_classify as m; print([n for n in {MNIST_API!r} if not hasattr(m, n)])"
    done = run_python(python_exe, tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"mnist_classify lacks {done.stdout.strip()}"


@pytest.mark.parametrize("script", sorted(ep.name for ep in distribution("slurm-dl-kit").entry_points))
def test_console_script_targets_exist(script: str) -> None:
    """Each console script in pyproject.toml points at a function that imports."""
    (entry,) = [ep for ep in distribution("slurm-dl-kit").entry_points if ep.name == script]
    assert callable(entry.load())


def test_imports_between_jobs_and_profiling_run_one_way() -> None:
    """`jobs/` imports `profiling/` (its sweep settings, CPU rule and report); `profiling/` never imports `jobs/`,
    and never submits a job: Slurm through submitit lives in jobs/slurm.py."""
    import ast

    root = Path(__file__).resolve().parents[1]
    wrong = []
    for path in sorted((root / "profiling").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [f"{path.name}: {n}" for n in names if n == "jobs" or n.startswith("jobs.")]
    assert wrong == []
    assert "from jobs.slurm import" in (root / "jobs" / "submit.py").read_text(encoding="utf-8")
    assert not any("submitit" in path.read_text(encoding="utf-8") for path in (root / "profiling").glob("*.py"))
