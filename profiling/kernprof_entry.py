"""The process `dlkit-prof run` profiles in: kernprof, minus tracing in forked DataLoader workers.

Why: a DataLoader worker is a fork of the profiled process and inherits the line tracer (legacy trace on <= 3.11, a
process-wide `sys.monitoring` LINE event on 3.12+). Nothing it does is recorded, yet every line pays the tracer's cost:
on an H100 a num_workers=1 epoch ran 2.2x slower, inflating the very data wait the report measures. So tracing is
off in each forked child. Usage (`runner.kernprof_command`): python -m profiling.kernprof_entry KERNPROF-ARGS...
"""
from __future__ import annotations

import atexit
import builtins
import os
import sys
import threading
from typing import Any

REAL_EXIT, MAIN_PID = os._exit, os.getpid()


class HardExit(SystemExit):
    """The script's `os._exit(code)` skips kernprof's `finally` and the atexit handlers: a script that ends with it (so
    that no thread can hang its exit) left no profile. In the main thread it is raised instead (`hard_exit`)."""


def hard_exit(code: int) -> None:
    if os.getpid() != MAIN_PID or threading.current_thread() is not threading.main_thread():
        REAL_EXIT(code)  # forked workers and other threads exit as they asked
    raise HardExit(code)


def stop_line_tracing() -> None:
    """Called in every forked child: drop the tracer the parent had on, and keep the profiled functions' wrappers from
    turning it on again (forked while no profiled function ran, in a framework's trainer, workers traced 3x slower)."""
    sys.settrace(None)
    if hasattr(getattr(builtins, "profile", None), "enable"):
        builtins.profile.enable = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+
    for tool_id in range(6) if monitoring is not None else ():  # sys.monitoring has six tool ids
        if monitoring.get_tool(tool_id) == "line_profiler":
            monitoring.set_events(tool_id, monitoring.events.NO_EVENTS)


def skip_wrappers(eval_frame: Any) -> None:
    """torch.compile traced into line_profiler's wrapper of a profiled `forward` and stopped the script
    (InternalTorchDynamoError: 'LineProfiler' object has no attribute '__name__'): its frames are skipped, and what
    it wraps is compiled as ever (its lines then run compiled, untraced)."""
    from line_profiler import LineProfiler

    eval_frame.skip_code(LineProfiler().wrap_function(lambda: None).__code__)


def scripted_unwrapped(jit: Any) -> None:
    """torch.jit.script compiled line_profiler's wrapper of a profiled `forward` and looked its names up in
    line_profiler's module (RuntimeError: undefined value F; unseen k_3). The classes of the modules it is given get
    their own functions back first; their lines then run as TorchScript, untraced."""
    script = jit.script

    def own(fn: Any) -> Any:  # what line_profiler's wrapper wraps, else fn itself
        return fn.__wrapped__ if "line_profiler" in getattr(getattr(fn, "__code__", None), "co_filename", "") else fn

    def script_unwrapped(obj: Any, *args: Any, **kwargs: Any) -> Any:
        for cls in {type(m) for m in getattr(obj, "modules", list)()}:  # a module's, its submodules' (a function: none)
            for name, value in [(n, v) for n, v in vars(cls).items() if own(v) is not v]:
                setattr(cls, name, own(value))
        return script(own(obj), *args, **kwargs)

    jit.script = script_unwrapped


def unshadowed_decorator(name: str = "__dlkit_profile__") -> None:
    """Auto-profiling decorates each function with the name `profile`, and a script that imports torch.profiler's
    `profile` (as PyTorch's tutorials do) made its first `def` call that instead (TypeError: profile.__init__()
    takes 1 positional argument). The decorator gets a name of its own, bound to kernprof's profiler."""
    from line_profiler.autoprofile import ast_profile_transformer as transformer, autoprofile

    for function in (transformer.ast_create_profile_node, transformer.AstProfileTransformer.__init__):
        function.__defaults__ = tuple(name if d == "profile" else d for d in function.__defaults__ or ())
    run = autoprofile.run

    def run_with_the_name_bound(script: str, ns: dict, *args: Any, **kwargs: Any) -> Any:
        setattr(builtins, name, ns["prof"])  # kernprof's profiler, as `profile` is
        return run(script, ns, *args, **kwargs)

    autoprofile.run = run_with_the_name_bound


def main(argv: list[str] | None = None) -> int:
    os.register_at_fork(after_in_child=stop_line_tracing)
    os._exit = hard_exit
    unshadowed_decorator()
    from profiling import interrupts
    from profiling.capture import install, on_import
    from profiling.loader_curve import install as measure_curve_at_exit

    install()  # records the script's DataLoaders when `run` asked for it (DLPROF_LOADERS)
    on_import("torch._dynamo.eval_frame", skip_wrappers)  # loaded by torch.compile, if the script compiles
    on_import("torch.jit", scripted_unwrapped)
    measure_curve_at_exit()  # and measures the busiest one's curve at exit when it asked for that (DLPROF_CURVE)
    import kernprof  # imported late: only the child process needs line_profiler

    try:
        return kernprof.main(sys.argv[1:] if argv is None else argv) or 0
    except HardExit as asked:  # the profile is written: the records at exit too, then exit as the script asked
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        REAL_EXIT(asked.code if isinstance(asked.code, int) else 1)
    except KeyboardInterrupt:
        if not interrupts.terminated:
            raise
        return 143  # a SIGTERM, quietly, as a shell reports it: kernprof wrote the profile on the way out


if __name__ == "__main__":
    sys.exit(main())
