"""environment.yml (conda, for clusters) and pyproject.toml (pip) must ask for the same packages.

Conda cannot solve offline here, so the file is parsed and compared: the same names, through a
map for the packages that conda calls differently, and the same version floors.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
CONDA_TO_PYPI = {"pytorch": "torch"}   # conda-forge name -> PyPI name
CONDA_ONLY = {"pip"}                   # tools of the environment, not dependencies of the kit


def floor(req: Requirement) -> str | None:
    """The version after `>=`, the only kind of bound both files use."""
    floors = [s.version for s in req.specifier if s.operator == ">="]
    return floors[0] if floors else None


def conda_requirements(env: dict) -> dict[str, Requirement]:
    """Requirements by PyPI name, from the conda list and its pip sub-list."""
    specs: list[str] = []
    for entry in env["dependencies"]:
        specs.extend(entry["pip"] if isinstance(entry, dict) else [entry])
    reqs = {}
    for spec in specs:
        req = Requirement(spec)
        if req.name not in CONDA_ONLY:
            reqs[canonicalize_name(CONDA_TO_PYPI.get(req.name, req.name))] = req
    return reqs


def pyproject_requirements(project: dict) -> dict[str, Requirement]:
    """Runtime requirements by name, with requires-python as the `python` entry."""
    reqs = {canonicalize_name(Requirement(s).name): Requirement(s) for s in project["dependencies"]}
    reqs["python"] = Requirement("python" + project["requires-python"])
    return reqs


def mismatches(conda: dict[str, Requirement], pip: dict[str, Requirement]) -> list[str]:
    """Every difference, each as one readable line (empty when the files agree)."""
    problems = [f"{name}: only in environment.yml" for name in sorted(conda.keys() - pip.keys())]
    problems += [f"{name}: only in pyproject.toml" for name in sorted(pip.keys() - conda.keys())]
    for name in sorted(conda.keys() & pip.keys()):
        if floor(conda[name]) != floor(pip[name]):
            problems.append(
                f"{name}: floor {floor(conda[name])} in environment.yml, {floor(pip[name])} in pyproject.toml"
            )
    return problems


def load() -> tuple[dict, dict]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return env, project


def test_environment_yml_matches_pyproject() -> None:
    env, project = load()
    assert env["channels"] == ["conda-forge"]
    problems = mismatches(conda_requirements(env), pyproject_requirements(project))
    assert problems == [], "environment.yml and pyproject.toml disagree:\n" + "\n".join(problems)


def test_every_runtime_dependency_has_a_floor() -> None:
    _, project = load()
    unbounded = [spec for spec in project["dependencies"] if floor(Requirement(spec)) is None]
    assert unbounded == []


def test_mismatches_are_reported() -> None:
    """The comparison itself can fail: an extra package, a missing one and a moved floor all show."""
    env = {"dependencies": ["python>=3.10", "pytorch>=2.4", "seaborn>=0.13", "pip",
                            {"pip": ["line-profiler>=4.1"]}]}
    project = {"requires-python": ">=3.10",
               "dependencies": ["torch>=2.11", "pandas>=2.0", "line_profiler>=4.1"]}
    problems = mismatches(conda_requirements(env), pyproject_requirements(project))
    assert problems == [
        "seaborn: only in environment.yml",
        "pandas: only in pyproject.toml",
        "torch: floor 2.4 in environment.yml, 2.11 in pyproject.toml",
    ]
