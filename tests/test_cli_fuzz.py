"""Fuzz every command-line entry point: whatever a user types, the answer is exit 0 or 2, never a traceback.

Learners paste commands from lessons, mistype flags and point them at the wrong file. Each entry
point promises one clear line and exit 2 for that, so hypothesis throws argument lists at each one:
its own flags (read from its argparse parser, so a new flag is fuzzed without touching this file)
with odd values, and paths to files that are missing, a folder, empty, binary or truncated.

The entry points run in this process (their `main(argv)`), so an example costs milliseconds, not a
Python start-up; `capfd` still sees what a child process (kernprof) prints. Nothing here may start
real work, so:
- Slurm's commands are taken off PATH: `jobs sbatch` and `jobs submit` (its sweep too) can only refuse;
- training scripts only ever get a data folder without MNIST, and never `--synthetic`/`--download`;
- `profiling run`/`sweep` only ever profile a fuzzed (broken or empty) script.
Examples are bounded in number (and derandomised under CI=true, so a CI run is repeatable).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jobs.cli
import jobs.submit
import mnist_classify
import profiling.cli
from multi_gpu import mnist_ddp

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
LPROF = REPO / "tests" / "data" / "lprof" / "line_profiler-4.0.0-py3.11.lprof.bin"
KINDS = ("missing", "folder", "empty", "binary", "truncated")
# Real inputs of each entry point, to cut short for the "truncated" kind.
SOURCES = {"lprof": LPROF, "job": REPO / "jobs" / "templates" / "tuned.sbatch",
           "script": REPO / "tests" / "data" / "lprof" / "loader_loop.py"}
ODD_VALUES = ("0", "-1", "1", "3", "abc", "", "1e9", "nan", "-", "--", "0,1", "x,y", "cpu", "cuda", "auto",
              "=", "ü", "1:2", "00:61:00")
NEVER = {"--synthetic", "--download", "-h", "--help", "--data-dir", "--save-model"}


def _make(kind: str, source: str, where: Path) -> str:
    """A path of the given kind; each call gets a fresh name so examples do not share files."""
    path = Path(tempfile.mkdtemp(dir=where)) / ("input" + Path(SOURCES[source]).suffix)
    if kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "truncated":
        data = SOURCES[source].read_bytes()
        path.write_bytes(data[: len(data) // 3])
    return str(path)


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, bool]]:
    """(flag, takes a value) for each option of a parser, minus those that would start real work."""
    found = []
    for action in parser._actions:  # argparse has no public list of its actions
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in NEVER:
                found.append((flag, action.nargs != 0))
    return found


def _argv(parser: argparse.ArgumentParser, path: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """Up to four of the parser's flags, each with an odd value, a fuzzed path or random text."""
    value = st.one_of(st.sampled_from(ODD_VALUES), path, st.text(max_size=8))
    flag = st.sampled_from(_options(parser)).flatmap(
        lambda fv: st.tuples(st.just(fv[0]), value).map(list) if fv[1] else st.just([fv[0]]))
    return st.lists(flag, max_size=4).map(lambda parts: [x for part in parts for x in part])


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


SLURM_COMMANDS = {"sbatch", "srun", "salloc", "squeue", "scancel", "sacct", "scontrol", "sinfo", "sstat"}


@pytest.fixture(scope="module")
def path_without_slurm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """PATH with every folder that holds Slurm's commands replaced by a copy (of links) without them."""
    folders = []
    for i, folder in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if folder and any(Path(folder, c).exists() for c in SLURM_COMMANDS):
            shadow = tmp_path_factory.mktemp(f"path{i}")
            for entry in Path(folder).iterdir():
                if entry.name not in SLURM_COMMANDS:
                    (shadow / entry.name).symlink_to(entry)
            folder = str(shadow)
        folders.append(folder)
    return os.pathsep.join(folders)


@pytest.fixture(autouse=True)
def no_slurm_and_quiet_torch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, path_without_slurm: str):
    """PATH without Slurm's commands, a private working folder, one torch thread."""
    import torch

    monkeypatch.setenv("PATH", path_without_slurm)
    assert shutil.which("sbatch") is None and shutil.which("bash") is not None
    monkeypatch.chdir(tmp_path)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _outcome(main: Callable[[list[str]], int | None], argv: list[str]) -> int:
    """The exit code `python -m ...` would give: main's return value, or SystemExit's code."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    if code is None:
        return 0
    return code if isinstance(code, int) else 1  # a message given to SystemExit exits 1


def _assert_clean(capfd: pytest.CaptureFixture, argv: list[str], code: int) -> None:
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err, f"traceback for {argv!r}:\n{err[-3000:]}"
    assert code in (0, 2), f"exit {code} for {argv!r}:\n{err[-2000:]}"
    if code == 2:
        assert err.strip(), f"exit 2 with no message for {argv!r}"


FUZZ = settings(max_examples=30, deadline=None, derandomize=IN_CI, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
KIND = st.sampled_from(KINDS)


@FUZZ
@given(data=st.data())
def test_profiling_report_and_compare(data: st.DataObject, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    verbs = _subparsers(profiling.cli.build_parser())
    verb = data.draw(st.sampled_from(["report", "compare"]))
    lprof = KIND.map(lambda k: _make(k, "lprof", tmp_path))
    positional = [data.draw(lprof) for _ in range(1 if verb == "report" else 2)]
    argv = [verb, *positional, *data.draw(_argv(verbs[verb], lprof))]
    _assert_clean(capfd, argv, _outcome(profiling.cli.main, argv))


@settings(FUZZ, max_examples=12)
@given(data=st.data())
def test_profiling_run_and_sweep(data: st.DataObject, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    verbs = _subparsers(profiling.cli.build_parser())
    verb = data.draw(st.sampled_from(["run", "sweep"]))
    path = KIND.map(lambda k: _make(k, "script", tmp_path))
    options = data.draw(_argv(verbs[verb], path))
    if verb == "sweep":  # keep a sweep to one short setting: each one runs the script
        options += ["--workers", "0"]
    argv = [verb, *options, "--output-dir", str(tmp_path / "out"), "--", data.draw(path),
            *data.draw(st.lists(st.sampled_from(ODD_VALUES), max_size=2))]
    _assert_clean(capfd, argv, _outcome(profiling.cli.main, argv))


@FUZZ
@given(data=st.data())
def test_jobs_verbs(data: st.DataObject, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    verb = data.draw(st.sampled_from(["check", "sbatch", "gather", "rules", "submit"]))
    job = KIND.map(lambda k: _make(k, "job", tmp_path))
    if verb == "check":
        argv = ["check", *data.draw(st.lists(job, min_size=1, max_size=3))]
    elif verb == "sbatch":
        argv = ["sbatch", *data.draw(st.lists(st.sampled_from(["--cpus-per-task=2", "--gres=gpu:1", "-t", "5"]),
                                              max_size=2)), data.draw(job)]
    elif verb == "gather":
        folder = KIND.map(lambda k: _make(k, "lprof", tmp_path))
        argv = ["gather", data.draw(folder),
                *data.draw(_argv(_subparsers(jobs.cli.build_parser())["gather"], folder))]
    elif verb == "submit":
        argv = ["submit", data.draw(st.sampled_from(["single", "sweep", "ddp", "other"])),
                *data.draw(_argv(jobs.submit.build_parser(), job)), "--folder", data.draw(job)]
    else:
        argv = ["rules"]
    _assert_clean(capfd, argv, _outcome(jobs.cli.main, argv))


@FUZZ
@given(data=st.data())
def test_training_scripts(data: st.DataObject, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    """Both lesson scripts stop at the data (no MNIST in any fuzzed folder) or before it."""
    main = data.draw(st.sampled_from([mnist_classify.main, mnist_ddp.main]))
    path = KIND.map(lambda k: _make(k, "lprof", tmp_path))
    argv = [*data.draw(_argv(mnist_classify.build_parser(), path)), "--data-dir", data.draw(path),
            "--device", "cpu"]
    with contextlib.redirect_stdout(open(os.devnull, "w")):
        code = _outcome(main, argv)
    _assert_clean(capfd, argv, code)
