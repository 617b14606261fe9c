"""Ctrl-C in the profiled process: never lost while a DataLoader starts its workers.

Why: starting a worker forks, and Python runs its fork hooks (logging's lock release among them) right after. A
Ctrl-C there raises KeyboardInterrupt inside a hook, where Python prints "Exception ignored" and drops it: the loop
goes on. Trials start workers often, and under load CI saw exactly that (the run stopped only when killed). So every
loader call the hook makes (`guarded`) ends in KeyboardInterrupt if a Ctrl-C arrived during it. A SIGTERM that the
script does not handle itself takes the same path.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_depth = 0          # loader calls in progress (they nest: a trial's segment inside the hooked __next__)
_pending = False    # a Ctrl-C arrived during the current outermost call
seen = False        # the user pressed Ctrl-C during this run (loader_curve then skips its measurement)
terminated = False  # ... or a SIGTERM, turned into one


def install() -> None:
    """Note every Ctrl-C before Python's default handler raises it (a script's own SIGINT handler is left alone)."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        return

    def noted(signum: int, frame: Any) -> None:
        global _pending, seen
        seen = True
        if _depth:
            _pending = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, noted)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _term_as_ctrl_c)
        os.register_at_fork(after_in_child=_term_as_default)


def _term_as_default() -> None:
    """A forked DataLoader worker dies of SIGTERM as it would unprofiled: torch terminates a worker that did not stop
    in time, and one blocked in C would never run a Python handler (multiprocessing's exit then waits for it)."""
    if signal.getsignal(signal.SIGTERM) is _term_as_ctrl_c:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _term_as_ctrl_c(signum: int, frame: Any) -> None:
    """A SIGTERM (a time limit, scancel) stops a script that set no handler for it as Ctrl-C does, so that kernprof
    writes what it profiled. Slurm sends it to every process of the step and `run` passes it on too: a second one
    is ignored, as it could cut the profile's writing short."""
    global terminated
    terminated = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.kill(os.getpid(), signal.SIGINT)


def guarded(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)`, raising KeyboardInterrupt at its end if a Ctrl-C arrived during it and was swallowed on the way
    (a fork hook); one that got through is raised once, as usual."""
    global _depth, _pending
    if _depth == 0:
        _pending = False
    _depth += 1
    try:
        result = call(*args)
    except KeyboardInterrupt:
        _pending = False
        raise
    finally:
        _depth -= 1
    if _pending and _depth == 0:
        _pending = False
        raise KeyboardInterrupt
    return result
