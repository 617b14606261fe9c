"""Check that real output has the *shape* of a lesson's excerpt: same words, columns and keys.

Numbers are never compared: a run on another machine is faster or slower, and that is fine.
Text excerpts match line by line, in order, with lines allowed in between:

* every number (``12``, ``-3.5``, ``84.5%``, ``1e-06``, ``1,024``) matches any number;
* runs of spaces match any run of spaces, so table columns may be wider or narrower;
* ``...`` matches anything within a line, and a line that is only ``...`` marks skipped lines.

JSON excerpts match when every key of the excerpt is present with a value of the same kind.
"""
from __future__ import annotations

import json
import re
from typing import Any

_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(_NUMBER)


def line_pattern(line: str) -> re.Pattern[str]:
    """The regular expression one excerpt line stands for."""
    parts: list[str] = []
    for token in line.split():
        if token == "...":
            parts.append(r".*?")
            continue
        pieces, last = [], 0
        for segment in token.split("..."):
            sub, last = [], 0
            for number in _NUMBER_RE.finditer(segment):
                sub.append(re.escape(segment[last : number.start()]))
                sub.append(_NUMBER)
                last = number.end()
            sub.append(re.escape(segment[last:]))
            pieces.append("".join(sub))
        parts.append(r".*?".join(pieces))
    return re.compile(r"^\s*" + r"\s+".join(parts) + r"\s*$")


def text_mismatch(excerpt: str, output: str) -> str | None:
    """None when every excerpt line matches an output line, in order; else the first miss."""
    out_lines = output.splitlines()
    pos = 0
    for raw in excerpt.splitlines():
        if not raw.strip() or raw.strip() == "...":
            continue
        pattern = line_pattern(raw)
        for i in range(pos, len(out_lines)):
            if pattern.match(out_lines[i]):
                pos = i + 1
                break
        else:
            return f"no output line (after line {pos}) has the shape of: {raw.strip()!r}"
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "flag"  # true/false/null are interchangeable: a setting that is off may be null
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def json_mismatch(expected: Any, actual: Any, path: str = "$") -> str | None:
    """None when ``actual`` has every key of ``expected`` with a value of the same kind."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {_kind(actual)}"
        for key, value in expected.items():
            if key not in actual:
                return f"{path}: key {key!r} is missing (present: {sorted(actual)})"
            problem = json_mismatch(value, actual[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{path}: expected a list, got {_kind(actual)}"
        if expected and actual:
            return json_mismatch(expected[0], actual[0], f"{path}[0]")
        return None
    if _kind(expected) != _kind(actual) and "flag" not in (_kind(expected), _kind(actual)):
        return f"{path}: expected a {_kind(expected)}, got {_kind(actual)} ({actual!r})"
    return None


def mismatch(lang: str, excerpt: str, output: str) -> str | None:
    """Dispatch on the excerpt's language: ``json`` compares keys, anything else compares lines."""
    if lang != "json":
        return text_mismatch(excerpt, output)
    try:
        expected = json.loads(excerpt)
    except json.JSONDecodeError as err:
        return f"the excerpt itself is not valid JSON: {err}"
    try:
        actual = json.loads(output)
    except json.JSONDecodeError:
        start = output.find("{")
        try:
            actual = json.loads(output[start:]) if start >= 0 else None
        except json.JSONDecodeError:
            actual = None
        if actual is None:
            return "the output is not JSON"
    return json_mismatch(expected, actual)
