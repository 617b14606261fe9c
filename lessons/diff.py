"""Print what changed between two lesson scripts, as a unified diff (always exits 0 if both exist).

    python -m lessons.diff mnist_classify.py multi_gpu/mnist_ddp.py
    python -m lessons.diff mnist_classify.py:main multi_gpu/mnist_ddp.py:main

``FILE:NAME`` compares one top-level function or class only (``FILE:A,B`` several, in that
order), which keeps the diff to the lines a lesson is about. The lessons call this instead of pasting
a diff, so the diff is always current.
Unlike ``diff -u``, it exits 0 when the files differ, so a lesson block does not look failed.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import os
import sys
from pathlib import Path


def source_of(spec: str) -> tuple[str, list[str]]:
    """The label and lines of ``FILE``, or of its top-level definitions ``FILE:NAME[,NAME...]``."""
    path_text, _, names = spec.partition(":")
    path = Path(path_text)
    text = path.read_text(encoding="utf-8")
    if not names:
        return path_text, text.splitlines(keepends=True)
    lines = text.splitlines(keepends=True)
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            found[node.name] = lines[first - 1 : node.end_lineno]
    missing = [name for name in names.split(",") if name not in found]
    if missing:
        raise LookupError(f"{path_text} has no top-level function or class named {missing[0]!r}")
    picked: list[str] = []
    for name in names.split(","):
        picked += (["\n"] if picked else []) + found[name]  # a blank line between definitions
    return spec, picked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lessons.diff", description=__doc__.split("\n")[0])
    parser.add_argument("old", help="FILE or FILE:NAME")
    parser.add_argument("new", help="FILE or FILE:NAME")
    parser.add_argument("-U", "--context", type=int, default=3, help="lines of context (default 3)")
    args = parser.parse_args(argv)
    try:
        old_label, old = source_of(args.old)
        new_label, new = source_of(args.new)
    except (OSError, LookupError, SyntaxError) as err:
        print(f"lessons.diff: {err}", file=sys.stderr)
        return 2
    try:
        sys.stdout.writelines(difflib.unified_diff(old, new, old_label, new_label, n=args.context))
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` closed the pipe: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")
    return 0


if __name__ == "__main__":
    sys.exit(main())
