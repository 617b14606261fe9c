"""Check that real output matches a lesson's excerpt: same words, same counts, free timings.

A reader compares an excerpt with what they see, so every number that does not depend on the machine
(step and image counts, workers, CPUs, exit codes, advice on a fixed input) must be the same. Numbers
that do depend on it (seconds, images/s, job ids) are marked as free in the lesson's source:

* a number written ``~12.5`` (a tilde before it) matches any number; a number without one must be
  the same text (``30`` matches ``30``, not ``31`` nor ``30.0``);
* runs of spaces match any run of spaces, so table columns may be wider or narrower;
* ``...`` matches anything within a line, and a line that is only ``...`` marks skipped lines.

Text excerpts match line by line, in order, with lines allowed in between. JSON excerpts match when
every key of the excerpt is present with the same value: strings equal (``...`` inside one matches
anything there), numbers and flags equal, except under the keys the block's ``free=KEY,KEY`` option
names, whose values need only be of the same kind.
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: A number in an excerpt, with the tilde that frees it.
_EXCERPT_NUMBER_RE = re.compile(r"(~?)(" + _NUMBER + ")")
#: The mark of a free number in a lesson's excerpt.
FREE = "~"


def _segment_pattern(segment: str) -> str:
    out, last = [], 0
    for number in _EXCERPT_NUMBER_RE.finditer(segment):
        free = number.group(1) == FREE
        out.append(re.escape(segment[last : number.start()]))
        out.append(_NUMBER if free else _fixed(number.group(2), segment[: number.start()], segment[number.end() :]))
        last = number.end()
    out.append(re.escape(segment[last:]))
    return "".join(out)


def _fixed(number: str, before: str, after: str) -> str:
    """A fixed number must not be the tail or the head of a longer one (30 is not 130 nor 30.5),
    except where the excerpt itself goes on: 2.15.0 is the numbers 2.15 and .0, back to back."""
    head = "" if before[-1:].isdigit() or before.endswith(".") else r"(?<![\d.])"
    tail = "" if re.match(r"\.\d", after) else r"(?!\d)(?!\.\d)"
    return head + re.escape(number) + tail


def line_pattern(line: str) -> re.Pattern[str]:
    """The regular expression one excerpt line stands for."""
    parts: list[str] = []
    for token in line.split():
        if token == "...":
            parts.append(r".*?")
            continue
        parts.append(r".*?".join(_segment_pattern(s) for s in token.split("...")))
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
            near = [line for line in out_lines[pos:] if _words(line) and _words(line) == _words(raw)]
            hint = f" (the nearest output line: {near[0].strip()!r})" if near else ""
            return f"no output line (after line {pos}) matches: {raw.strip()!r}{hint}"
    return None


def _words(line: str) -> list[str]:
    """A line without its numbers: to point at the output line whose numbers went stale."""
    return re.sub(_NUMBER, "#", line.replace(FREE, "")).split()


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "flag"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _string_matches(expected: str, actual: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, flags=re.S) is not None


def json_mismatch(expected: Any, actual: Any, path: str = "$", free: Collection[str] = ()) -> str | None:
    """None when ``actual`` has every key of ``expected`` with the same value (a free key's value:
    the same kind); lists are compared item by item, as far as the excerpt goes."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {_kind(actual)}"
        for key, value in expected.items():
            if key not in actual:
                return f"{path}: key {key!r} is missing (present: {sorted(actual)})"
            if key in free:
                if _kind(value) != _kind(actual[key]):
                    return f"{path}.{key}: expected a {_kind(value)}, got {_kind(actual[key])} ({actual[key]!r})"
                continue
            problem = json_mismatch(value, actual[key], f"{path}.{key}", free)
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{path}: expected a list, got {_kind(actual)}"
        if len(actual) < len(expected):
            return f"{path}: expected at least {len(expected)} items, got {len(actual)}"
        for i, item in enumerate(expected):
            problem = json_mismatch(item, actual[i], f"{path}[{i}]", free)
            if problem:
                return problem
        return None
    if isinstance(expected, str) and isinstance(actual, str):
        return None if _string_matches(expected, actual) else f"{path}: expected {expected!r}, got {actual!r}"
    if _kind(expected) != _kind(actual) or expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r} (mark the key free=... if it is a timing)"
    return None


def _parse_output_json(output: str) -> Any:
    try:
        return json.loads(output)
    except json.JSONDecodeError:
        start = output.find("{")
        try:
            return json.loads(output[start:]) if start >= 0 else None
        except json.JSONDecodeError:
            return None


def mismatch(lang: str, excerpt: str, output: str, free: Collection[str] = ()) -> str | None:
    """Dispatch on the excerpt's language: ``json`` compares keys and values, anything else lines."""
    if lang != "json":
        return text_mismatch(excerpt, output)
    try:
        expected = json.loads(excerpt)
    except json.JSONDecodeError as err:
        return f"the excerpt itself is not valid JSON: {err}"
    actual = _parse_output_json(output)
    if actual is None:
        return "the output is not JSON"
    return json_mismatch(expected, actual, free=free)
