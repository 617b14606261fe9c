"""The process `dlprof run` profiles in: kernprof, minus tracing in forked DataLoader workers.

Why: a DataLoader worker is a fork of the profiled process, so it inherits the line tracer
(legacy trace on Python <= 3.11, a process-wide `sys.monitoring` LINE event on 3.12+). The
worker never runs the profiled function, so nothing it does is recorded, yet every Python line
of its image decoding still pays the tracer's cost. On an H100 that made a num_workers=1 epoch
2.2x slower under the profiler, and inflated the very data wait the report measures.
Turning tracing off in each forked child keeps the workers at full speed.

Usage (what `profiling.runner.kernprof_command` builds): python -m profiling.kernprof_entry KERNPROF-ARGS...
"""
from __future__ import annotations

import os
import sys


def stop_line_tracing() -> None:
    """Called in every forked child: drop the tracer the parent had on."""
    sys.settrace(None)
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+
    if monitoring is None:
        return
    for tool_id in range(6):  # sys.monitoring has six tool ids
        if monitoring.get_tool(tool_id) == "line_profiler":
            monitoring.set_events(tool_id, monitoring.events.NO_EVENTS)


def main(argv: list[str] | None = None) -> int:
    os.register_at_fork(after_in_child=stop_line_tracing)
    from profiling.capture import install

    install()  # records the script's DataLoaders when `run` asked for it (DLPROF_LOADERS)
    import kernprof  # imported late: only the child process needs line_profiler

    return kernprof.main(sys.argv[1:] if argv is None else argv) or 0


if __name__ == "__main__":
    sys.exit(main())
