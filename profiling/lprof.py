"""Stage 1: load a `.lprof` file safely and normalise it to a `LineProfile`.

A `.lprof` is a pickle, and unpickling runs whatever the file asks for; reports are often made from files someone
else sent. So this unpickler builds only a class named `LineStats` (from any module: 5.x moved it), as an inert
stand-in, and a few data-only builtins; anything else (`os.system`, `builtins.eval`...) is refused before it can be
called, and line_profiler is not needed. Every way a file can be wrong becomes a `ProfileError` a learner can act on.
"""
from __future__ import annotations

import io
import math
import pickle
import pickletools
from contextlib import suppress
from pathlib import Path
from typing import Any

from profiling.records import LineProfile, ProfileError

_SAFE_BUILTINS = frozenset({"set", "frozenset", "complex"})  # data-only builtins old pickles reach through a global
_MEMO_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"})  # opcodes with a memo index
MAX_BYTES = 512 * 1024 * 1024  # a generous ceiling: a real profile of hundreds of functions is well under a few MB


class _LineStatsState:
    """Inert stand-in for any version's `LineStats`: BUILD fills its `__dict__`; it keeps constructor arguments too."""

    def __init__(self, timings: Any = None, unit: Any = None) -> None:
        self.timings, self.unit = timings, unit  # (None reads as missing, as an attribute never set would)


class _UnsafePickle(pickle.UnpicklingError):
    """The file asked for a global we do not allow (kept apart to word the message)."""


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name == "LineStats":
            return _LineStatsState
        if module == "builtins" and name in _SAFE_BUILTINS:
            return getattr(__import__("builtins"), name)
        raise _UnsafePickle(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise _UnsafePickle("a persistent reference")


def load_lprof(path: str | Path) -> LineProfile:
    """Read `path` and return its `LineProfile`, or raise `ProfileError` saying what is wrong."""
    path = Path(path)
    if not path.exists():
        raise ProfileError(f"{path}: no such file")
    if path.is_dir():
        raise ProfileError(f"{path}: is a directory, not a .lprof file")
    try:
        if (size := path.stat().st_size) > MAX_BYTES:
            raise ProfileError(f"{path}: {size} bytes is too large to be a line profile")
        data = path.read_bytes()
    except OSError as err:
        raise ProfileError(f"{path}: cannot read: {err.strerror or err}") from None
    return parse_lprof(data, path)


def parse_lprof(data: bytes, path: Path | None = None) -> LineProfile:
    """Unpickle `data` with the restricted unpickler, then check and normalise its shape."""
    where = str(path) if path is not None else "profile"
    if not data:
        raise ProfileError(f"{where}: the file is empty (did kernprof finish writing it?)")
    if (far := _memo_index_past_the_data(data)) is not None:
        raise ProfileError(f"{where}: a truncated or corrupt .lprof file ({far})")
    try:
        obj = _RestrictedUnpickler(io.BytesIO(data)).load()
    except _UnsafePickle as err:
        raise ProfileError(f"{where}: refused to load: the pickle asks for {err}, which a line profile never "
                           "contains (the file may be malicious; nothing in it was run)") from None
    except RecursionError:
        raise ProfileError(f"{where}: not a line_profiler file (nested too deeply)") from None
    except Exception as err:  # untrusted bytes: every unpickling failure is the file's fault
        if not data.startswith(b"\x80"):  # kernprof always writes pickle protocol 2 or later
            raise ProfileError(f"{where}: not a .lprof file: it is not a pickle (is it the text "
                               "output of `python -m line_profiler`?)") from None
        raise ProfileError(f"{where}: a truncated or corrupt .lprof file ({type(err).__name__}: "
                           f"{_short(str(err))})") from None
    if not isinstance(obj, _LineStatsState):
        raise ProfileError(f"{where}: is a pickle of {type(obj).__name__}, not line_profiler's LineStats")
    state = vars(obj)
    return LineProfile(timings=_check_timings(state.get("timings"), where), unit=_check_unit(state.get("unit"), where))


def _memo_index_past_the_data(data: bytes) -> str | None:
    """Why: CPython's unpickler grows its memo table to any index a PUT names, so one flipped byte (a LONG_BINPUT of
    778,987,873) made it zero 6 GB and spend 12 s. A pickle stores at most one memo entry per byte, so a larger index
    is corruption. Other faults are left to the unpickler."""
    with suppress(Exception):  # any fault in the opcode stream: the unpickler names it
        for op, arg, pos in pickletools.genops(data):
            if op.name in _MEMO_OPS and isinstance(arg, int) and arg > len(data):
                return f"memo index {arg} at byte {pos} in a file of {len(data)} bytes"
    return None


def _check_unit(unit: Any, where: str) -> float:
    """Seconds per tick: 1e-6 in 3.x files, 1e-9 in 4.x/5.x. Always read it, never assume."""
    if isinstance(unit, bool) or not isinstance(unit, (int, float)):
        raise ProfileError(f"{where}: LineStats has no usable 'unit' (got {type(unit).__name__})")
    if not math.isfinite(unit) or unit <= 0:
        raise ProfileError(f"{where}: LineStats 'unit' must be a positive number of seconds, got {unit!r}")
    return float(unit)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_timings(timings: Any, where: str) -> dict[tuple[str, int, str], list[tuple[int, int, int]]]:
    """Check the `{(file, first_line, name): [(line, hits, ticks), ...]}` shape, line by line. Empty line lists (never
    ran, or `kernprof -z`) are kept; a profile with no recorded line at all is an error: nothing to report."""
    if not isinstance(timings, dict):
        raise ProfileError(f"{where}: LineStats has no 'timings' table (got {type(timings).__name__})")
    clean: dict[tuple[str, int, str], list[tuple[int, int, int]]] = {}
    for key, rows in timings.items():
        if (not isinstance(key, tuple) or len(key) != 3 or not isinstance(key[0], str)
                or not _is_count(key[1]) or not isinstance(key[2], str)):
            raise ProfileError(f"{where}: malformed function key {_short(key)}; expected (file, line, name)")
        if not isinstance(rows, (list, tuple)):
            raise ProfileError(f"{where}: malformed timings for {key[2]}: expected a list of lines")
        for row in rows:
            if (not isinstance(row, (tuple, list)) or len(row) != 3
                    or not all(_is_count(v) or (isinstance(v, float) and math.isfinite(v) and v >= 0) for v in row)):
                raise ProfileError(f"{where}: malformed line entry {_short(row)} in {key[2]}; "
                                   "expected (line, hits, time)")
        clean[key] = sorted((int(line), int(hits), int(ticks)) for line, hits, ticks in rows)
    if not any(clean.values()):
        what = "no function was profiled" if not clean else "no profiled line ever ran"
        raise ProfileError(f"{where}: the profile is empty ({what}); was the @profile function called?")
    return clean


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
