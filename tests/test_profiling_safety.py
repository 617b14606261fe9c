"""A .lprof is a pickle: a crafted one must be refused without running anything, and every
malformed input must end in one clear line and exit 2, never a traceback.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lprof_fixtures import MODULE_3X_4X, lprof_bytes, train_timings
from profiling.cli import main
from profiling.lprof import parse_lprof
from profiling.records import LineProfile, ProfileError

VALID = lprof_bytes(train_timings(20, {"wait": 5.0, "forward": 1.0}, 1e6), 1e-9)


class _RunsACommand:
    """Unpickling this calls os.system: the classic pickle exploit."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


class _Evals:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return eval, (self.code,)


class _Popen:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv

    def __reduce__(self):
        return subprocess.Popen, (self.argv,)


def _payloads(marker: Path) -> dict[str, bytes]:
    touch = f"touch {marker}"
    return {
        "os.system": pickle.dumps(_RunsACommand(touch)),
        "builtins.eval": pickle.dumps(_Evals(f"open({str(marker)!r}, 'w').close()")),
        "subprocess.Popen": pickle.dumps(_Popen(["touch", str(marker)])),
        "old protocol 0": pickle.dumps(_RunsACommand(touch), protocol=0),
        # a genuine-looking LineStats whose timings hide the exploit one level down
        "inside LineStats": lprof_bytes({("x.py", 1, "f"): [(2, 1, _RunsACommand(touch))]}, 1e-9),
    }


@pytest.mark.parametrize("kind", list(_payloads(Path("m"))))
def test_crafted_pickle_is_refused_and_never_runs(tmp_path, kind):
    marker = tmp_path / "PWNED"
    data = _payloads(marker)[kind]
    with pytest.raises(ProfileError, match="refused to load"):
        parse_lprof(data)
    assert not marker.exists()
    if kind == "os.system":  # prove the payload is live: plain pickle does run it
        pickle.loads(data)
        assert marker.exists(), "the test payload should really run under plain pickle"


def test_crafted_file_through_the_command_line(tmp_path, repo):
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.lprof"
    evil.write_bytes(_payloads(marker)["os.system"])
    out = subprocess.run([sys.executable, "-m", "profiling", "report", str(evil)], capture_output=True,
                         text=True, cwd=repo, timeout=120)
    assert out.returncode == 2 and "refused to load" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not marker.exists()


def _malformed(tmp_path: Path) -> dict[str, Path]:
    def write(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    ls = lambda timings, unit: lprof_bytes(timings, unit, MODULE_3X_4X)  # noqa: E731
    (tmp_path / "a_directory.lprof").mkdir()
    return {
        "missing file": tmp_path / "nope.lprof",
        "directory": tmp_path / "a_directory.lprof",
        "empty file": write("empty.lprof", b""),
        "text file": write("notes.lprof", b"Timer unit: 1e-06 s\n\nTotal time: 0.1 s\n"),
        "truncated": write("truncated.lprof", VALID[: len(VALID) // 2]),
        "pickle of a dict": write("dict.lprof", pickle.dumps({"timings": {}, "unit": 1e-9})),
        "pickle of a list": write("list.lprof", pickle.dumps([1, 2, 3])),
        "no unit": write("nounit.lprof", ls({("a.py", 1, "f"): [(2, 1, 3)]}, None)),
        "negative unit": write("negunit.lprof", ls({("a.py", 1, "f"): [(2, 1, 3)]}, -1.0)),
        "bad key": write("badkey.lprof", ls({"f": [(2, 1, 3)]}, 1e-6)),
        "bad row": write("badrow.lprof", ls({("a.py", 1, "f"): [(2, "x", 3)]}, 1e-6)),
        "empty profile": write("nothing.lprof", ls({}, 1e-9)),
        "only empty functions": write("zero.lprof", ls({("a.py", 1, "f"): [], ("a.py", 5, "g"): []}, 1e-9)),
    }


MALFORMED_CASES = ["missing file", "directory", "empty file", "text file", "truncated", "pickle of a dict",
                   "pickle of a list", "no unit", "negative unit", "bad key", "bad row", "empty profile",
                   "only empty functions"]


@pytest.mark.parametrize("case", MALFORMED_CASES)
def test_malformed_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    path = _malformed(tmp_path)[case]
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("dlkit-prof report: error:") and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["report", "x.lprof", "--cpus", "many"],
    ["report", "x.lprof", "--format", "pdf"],
    ["sweep", "--workers", "1,two", "--", "s.py"],
    ["run"],
    ["frobnicate"],
    [],
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_malformed_file_through_the_command_line(tmp_path, repo):
    path = _malformed(tmp_path)["truncated"]
    out = subprocess.run([sys.executable, "-m", "profiling", "report", str(path)], capture_output=True,
                         text=True, cwd=repo, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_a_memo_index_past_the_file_is_refused_before_the_unpickler_grows_its_table():
    """CI's fuzzing found it: one flipped byte became a LONG_BINPUT of 778,987,873, and CPython's
    unpickler zeroed a 6 GB memo table for it (12 s, all system time) before failing."""
    data = b"\x80\x02N" + b"r" + (778987873).to_bytes(4, "little") + b"."  # PROTO 2, None, LONG_BINPUT, STOP
    with pytest.raises(ProfileError) as refused:
        parse_lprof(data)
    assert "corrupt" in str(refused.value) and "memo index 778987873 at byte 3" in str(refused.value)
    assert isinstance(parse_lprof(VALID), LineProfile)  # a real one still loads


# --------------------------------------------------------------------------- fuzzing
def _mutations() -> st.SearchStrategy[bytes]:
    """Random bytes, and a valid profile with bytes cut, flipped or inserted."""
    def mutate(data: bytes, at: int, value: int, how: str) -> bytes:
        at %= len(data)
        if how == "cut":
            return data[:at]
        if how == "flip":
            return data[:at] + bytes([value]) + data[at + 1:]
        return data[:at] + bytes([value]) + data[at:]
    mutated = st.builds(mutate, st.just(VALID), st.integers(0, 10_000), st.integers(0, 255),
                        st.sampled_from(["cut", "flip", "insert"]))
    return st.one_of(st.binary(max_size=300), st.binary(max_size=200).map(lambda b: b"\x80\x05" + b), mutated)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_fuzz_loader_only_returns_a_profile_or_raises_profile_error(data):
    try:
        result = parse_lprof(data)
    except ProfileError as err:
        assert "\n" not in str(err)
    else:
        assert isinstance(result, LineProfile) and result.unit > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(_mutations())
def test_fuzz_command_line_never_shows_a_traceback(tmp_path, capsys, data):
    path = tmp_path / "fuzz.lprof"
    path.write_bytes(data)
    code = main(["report", str(path), "--cpus", "4", "--gpus", "1"])
    err = capsys.readouterr().err
    assert code in (0, 2)
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
