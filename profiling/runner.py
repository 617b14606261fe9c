"""`dlkit-prof run`: profile a script with kernprof, keep its exit code, then write the report.

Why not plain `kernprof -l`: it writes `script.py.lprof` into the current directory, crashes at the very end (after the
whole run) when an `-o` directory is missing, and lets a user's pyproject.toml change its options. The wrapper fixes
the name (the Slurm job id in a job), creates the directory first, passes `--no-config`, and writes `<stem>.meta.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from contextlib import nullcontext, suppress
from datetime import datetime, timezone
from pathlib import Path

from profiling import capture
from profiling.argv import declared_default, flag_value, output_stem
from profiling.cpu_rule import workers_for_cpus
from profiling.loader_curve import CURVE_VAR, SECONDS_VAR
from profiling.precheck import has_profile_decorator, loop_module, unreachable_loop
from profiling.records import ProfileError
from profiling.facts import Environment, cores_per_gpu_of, cpus_from_env, gpus_from_env, read_environment
from profiling.sampling import Sampler
from profiling.trials import SEGMENT_VAR, TRACE_VAR, TRY_VAR

SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NAME",
              "SLURM_JOB_PARTITION", "SLURM_JOB_NODELIST", "SLURM_CPUS_PER_TASK", "SLURM_GPUS_ON_NODE",
              "SLURM_JOB_GPUS", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_CLUSTER_NAME")  # kept to find the job in sacct


def script_num_workers(script: Path, args: list[str], cpus: int, gpus: int = 0) -> tuple[int | None, str]:
    """The DataLoader workers the run will use, and where that number came from."""
    value, source = flag_value(args, "--num-workers"), "the --num-workers argument"
    if value is None:
        value, source = declared_default(script, "--num-workers"), "the script's default for --num-workers"
    if value is None:
        return None, "unknown (no --num-workers argument)"
    if str(value) == "auto":  # the lesson script's meaning: the kit's one CPU rule
        return workers_for_cpus(cpus, gpus), f"{source} ('auto' = CPUs - the main process's)"
    try:
        return int(value), source
    except (TypeError, ValueError):
        return None, f"unknown ({source} is {value!r})"


def kernprof_command(script: str, args: list[str], lprof: Path, modules: Sequence[str] = ()) -> list[str]:
    """kernprof via `profiling.kernprof_entry`; `-p` profiles the script whole (unless it has `@profile`) and `modules`.
    `--` after the script, or kernprof takes its `-c config.yaml` as code to run and its `--out` for `--outfile`."""
    targets = list(modules) if has_profile_decorator(Path(script)) else [script, *modules]
    auto = [arg for target in targets for arg in ("-p", target)]
    return [sys.executable, "-m", "profiling.kernprof_entry", "-l", "-q", "--no-config", *auto, "-o", str(lprof),
            script, "--", *args]


def run_profiled(args: argparse.Namespace, out_dir: Path) -> tuple[int, dict, Sampler | None, Environment]:
    """The script under kernprof: traced, then timed untraced (profiling.trials); too short, the loader curve at end."""
    script, script_args, modules = args.command[0], args.command[1:], args.module
    out_dir.mkdir(parents=True, exist_ok=True)   # kernprof would fail only at the very end
    stem = output_stem(script)
    lprof, loaders, curve = (out_dir / f"{stem}{suffix}" for suffix in (".lprof", ".loaders.json", ".curve.json"))
    for stale in (lprof, out_dir / f"{stem}.samples.csv", loaders, curve):  # never report a previous run's results
        stale.unlink(missing_ok=True)
    meta: dict = {"stem": stem, "lprof": str(lprof), "argv": [script, *script_args],
                  "command": kernprof_command(script, script_args, lprof, modules), "cwd": os.getcwd(),
                  "hostname": socket.gethostname(), "python": sys.executable}
    # where profiling.capture records, the user's `--module`s, and the legacy tracer unless the user chose a core:
    # 3.12+'s `sys.monitoring` traces every thread (pin-memory's too), the legacy one only the main thread, cheaper
    child_env = {"LINE_PROFILER_CORE": "ctrace", **os.environ, capture.PATH_VAR: str(loaders),
                 capture.OWN_VAR: ",".join(modules)}
    if args.trace_batches > 0:
        child_env.update({TRACE_VAR: str(args.trace_batches), TRY_VAR: args.try_workers,
                          SEGMENT_VAR: str(args.segment_seconds)})
    if args.curve_seconds > 0:
        child_env.update({CURVE_VAR: str(curve), SECONDS_VAR: str(args.curve_seconds)})
    started = datetime.now(timezone.utc)
    meta.update(line_profiler_core=child_env["LINE_PROFILER_CORE"], start_time=started.isoformat(timespec="seconds"))
    sampler = None
    with Noted() as noted, subprocess.Popen(meta["command"], env=child_env) as child:
        noted.attach(child)
        threading.Thread(target=_import_report_modules, daemon=True).start()
        try:
            # what the report needs of the machine (NVML, scontrol: up to a second), read while the script runs
            machine = read_environment()
            meta.update(machine_meta(machine, Path(script), script_args, args.num_workers))
            if args.sample_gpu:
                sampler = Sampler(child.pid, interval=args.sample_interval)
                if sampler.message:
                    print(f"dlkit-prof run: {sampler.message}", file=sys.stderr)
            with sampler if sampler is not None else nullcontext():
                code = _exit_code(child.wait(), noted)
        finally:
            meta["end_time"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    meta.update(wall_seconds=round((datetime.now(timezone.utc) - started).total_seconds(), 3), exit_code=code,
                signals_passed_on=[signal.Signals(signum).name for signum in noted if signum != signal.SIGINT])
    (out_dir / f"{stem}.meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return code, meta, sampler, machine


def machine_meta(machine: Environment, script: Path, script_args: list[str], num_workers: int | None) -> dict:
    """The job's CPUs, GPUs and the script's num_workers, as `<stem>.meta.json` records them."""
    cpus = cpus_from_env(machine.env, machine.affinity)[0] or 1
    gpus = gpus_from_env(machine.env, machine.nvml_gpus)[0]
    workers, workers_source = (num_workers, "dlkit-prof run --num-workers") if num_workers is not None \
        else script_num_workers(script, script_args, cpus, min(gpus or 0, 1))
    return {"num_workers": workers, "num_workers_source": workers_source, "cpus": cpus,
            "gpus": gpus, "cores_per_gpu": cores_per_gpu_of(machine.node_text),
            "slurm": {k: os.environ[k] for k in SLURM_KEYS if k in os.environ}}


def _import_report_modules() -> None:
    """Import what the report needs (pandas, matplotlib: about a second) while the script runs, not after."""
    with suppress(ImportError):  # a missing plotting stack is reported when the report is written
        import profiling.html  # noqa: F401
        import profiling.plots  # noqa: F401
        import profiling.report  # noqa: F401


EXIT_INTERRUPTED = 130  # what a shell reports for a command stopped by Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # ... and by SIGTERM (a time limit, scancel, `kill PID`)
PASSED_ON = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)  # what a batch script sends `run` for its script


class Noted(list):
    """The signals `run` heard while the script ran. A terminal's Ctrl-C reaches the child too (our process group);
    the others, sent to `run` alone (`kill -USR1 $PID` in a batch script), are passed on to it, as if it ran plain.
    While the child runs (`with Noted()`), a SIGINT is noted, as a shell does, and the others passed on: raised here,
    any of them could land around the wait and lose the report (`run` died of SIGUSR1 and left its child training,
    unreported)."""

    child: subprocess.Popen | None = None

    def __enter__(self) -> Noted:
        self.previous = {signum: signal.signal(signum, self.hear) for signum in (signal.SIGINT, *PASSED_ON)}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def hear(self, signum: int, frame: object) -> None:
        self.append(signum)
        if signum != signal.SIGINT and self.child is not None:
            self.child.send_signal(signum)

    def attach(self, child: subprocess.Popen) -> None:
        """From now on pass signals on to `child`, and those heard while it started."""
        signal.pthread_sigmask(signal.SIG_BLOCK, PASSED_ON)
        self.child = child
        for signum in self:
            if signum != signal.SIGINT:
                child.send_signal(signum)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)


def _exit_code(code: int, noted: list[int]) -> int:
    """The code a shell gives, whatever kernprof chose (-2: the child re-raised a Ctrl-C): 130 for a Ctrl-C, 143 for a
    SIGTERM (which the child turns into a Ctrl-C: profiling.interrupts), 128 + N for signal N; else the script's own."""
    if code == -signal.SIGTERM or (signal.SIGTERM in noted and code in (EXIT_INTERRUPTED, 1, -signal.SIGINT)):
        return EXIT_TERMINATED
    if signal.SIGINT in noted or code == -signal.SIGINT:
        return EXIT_INTERRUPTED
    return 128 - code if code < 0 else code


def run_command(args: argparse.Namespace) -> int:
    """Profile, report, and return the script's own exit code (0 only if the script succeeded)."""
    script, modules = args.command[0], args.module
    decorated = has_profile_decorator(Path(script))
    found = None if decorated else loop_module(script, modules)
    modules = args.module = [*modules, found] if found else modules  # as if passed: the report shows the loop's lines
    unreachable = unreachable_loop(script, modules, decorated)
    if unreachable and not decorated:  # nothing the run could report on: refuse before it starts
        raise ProfileError(unreachable)
    if found:
        print(f"dlkit-prof run: the training loop is in your module {found}: profiling it too (--module {found})",
              file=sys.stderr)
    if unreachable:  # the user chose what to profile: say so, and profile it anyway
        print(f"dlkit-prof run: warning: {unreachable}", file=sys.stderr)
    out_dir = Path(args.output_dir)
    code, meta, sampler, machine = run_profiled(args, out_dir)
    # imported only now (a thread imported them while the script ran): pandas alone took 0.6 s before the start
    from profiling.render import render
    from profiling.report import build_report, write_report

    stem, lprof = meta["stem"], Path(meta["lprof"])
    if meta["signals_passed_on"]:
        print(f"dlkit-prof run: passed {', '.join(meta['signals_passed_on'])} on to the script", file=sys.stderr)
    if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        why = "interrupted (Ctrl-C)" if code == EXIT_INTERRUPTED else "stopped by SIGTERM (a time limit, or scancel)"
        print(f"dlkit-prof run: {why}; reporting what was profiled until then", file=sys.stderr)
    elif code != 0:
        print(f"dlkit-prof run: the script exited with code {code}", file=sys.stderr)
    if not lprof.exists():
        print(f"dlkit-prof run: kernprof wrote no profile ({lprof}); nothing to report", file=sys.stderr)
        return code if code != 0 else 1
    written = [lprof, out_dir / f"{stem}.meta.json"]
    written += [p for p in (out_dir / f"{stem}.loaders.json", out_dir / f"{stem}.curve.json") if p.is_file()]
    if sampler is not None:  # beside the .lprof, where build_report (and a later `report`) finds it
        written.append(sampler.write(out_dir / f"{stem}.samples.csv"))
    try:
        report = build_report(lprof, cpus=args.cpus, gpus=args.gpus, num_workers=args.num_workers,
                              source_root=Path(meta["cwd"]), cores_per_gpu=args.cores_per_gpu, environment=machine)
    except ProfileError as err:
        if code != 0 and "profile is empty" in str(err):  # it stopped before its loop (an argument error...)
            print("dlkit-prof run: the script stopped before any profiled line ran; nothing to report", file=sys.stderr)
        else:
            print(f"dlkit-prof run: error: {err}", file=sys.stderr)
        return code if code != 0 else 2
    if report.loop is None and code not in (0, EXIT_INTERRUPTED) and not decorated:  # its own argument error...
        print("dlkit-prof run: the script stopped before its training loop; no report", file=sys.stderr)
        return code
    written += write_report(report, out_dir, stem, [f.strip() for f in args.formats.split(",") if f.strip()])
    print(render(report, "text"))
    print("\nfiles:\n" + "\n".join(f"  {p}" for p in written))
    return code
