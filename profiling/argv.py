"""Reading a training script's command-line arguments without importing the script.

One home for the small scans that `run`, the sweep, the job facts and the job launcher each need:
the value of a flag, whether a flag is there, an on/off switch, and the arguments with a flag taken out.
"""
from __future__ import annotations

from collections.abc import Iterable


def flag_value(args: list[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V` in a script's arguments (the last one wins)."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def has_flag(args: Iterable[str], flag: str) -> bool:
    """True when `--flag` or `--flag=V` is among the arguments."""
    return any(arg == flag or arg.startswith(flag + "=") for arg in args)


def switch(args: list[str], on: str, off: str | None = None) -> bool | None:
    """True/False when the arguments turned an option on/off, None when they did not say."""
    if on in args:
        return True
    if off is not None and off in args:
        return False
    return None


def strip_flags(args: list[str], flags: tuple[str, ...]) -> list[str]:
    """Remove `--flag V` / `--flag=V` so that the caller's own values are the only ones."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        elif not any(arg.startswith(f + "=") for f in flags):
            out.append(arg)
    return out
