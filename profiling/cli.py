"""The command line: `python -m profiling VERB`, installed as `dlkit-prof` (not `dlprof`, NVIDIA DLProf's command in
NGC PyTorch containers). Each verb is one function elsewhere, imported lazily so `report` and `--help` work without
the others' dependencies. A user's error prints ONE line on stderr and exits 2, never a traceback: learners read these.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

from profiling.argv import script_problem
from profiling.records import ProfileError

EXIT_BAD_INPUT = 2
FORMATS = ("text", "md", "html", "json", "csv")
DEFAULT_WORKERS = "0,1,2,4,8"
LAZY_VERBS = {"run": ("profiling.runner", "run_command"), "compare": ("profiling.compare", "compare_command"),
              "sweep": ("profiling.sweep", "sweep_command")}


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`dlkit-prof report: error: ...`) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _checked(text: str, parse: Callable[[str], Any], kind: str, fits: Callable[[Any], bool], bound: str) -> Any:
    """`parse(text)`, or argparse's one line: `kind` if it does not parse, `bound` ({text}, {value}) if it misfits."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if not fits(value):
        raise argparse.ArgumentTypeError(bound.format(text=text, value=value))
    return value


def _non_negative_int(text: str) -> int:
    return _checked(text, int, "a whole number", lambda value: value >= 0, "expected a number >= 0, got {value}")


def _worker_list(text: str) -> list[int]:
    """`0,1,2,4` -> [0, 1, 2, 4]; sorted, without repeats."""
    return _checked(text, lambda words: sorted({int(part) for part in words.split(",") if part.strip()}),
                    "comma-separated whole numbers such as 0,1,2,4", lambda values: bool(values) and values[0] >= 0,
                    "expected numbers >= 0, got {text!r}")


def _add_job_flags(parser: argparse.ArgumentParser) -> None:
    """Flags that override what the report would otherwise read from Slurm / the affinity mask."""
    parser.add_argument("--cpus", type=_non_negative_int, default=None,
                        help="CPUs the job may use (default: SLURM_CPUS_PER_TASK, else the affinity mask)")
    parser.add_argument("--gpus", type=_non_negative_int, default=None,
                        help="GPUs the job uses (default: run metadata, SLURM_GPUS_ON_NODE, CUDA_VISIBLE_DEVICES)")
    parser.add_argument("--cores-per-gpu", type=_non_negative_int, default=None,
                        help="the node's CPU cores per GPU, the ceiling for --cpus-per-task "
                             "(default: from `scontrol show node` inside a Slurm job, else unknown)")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="dlkit-prof", description="Profile a training script with kernprof and turn the "
                            ".lprof into a report that says where each batch's time goes and which num_workers / "
                            "--cpus-per-task to use.")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_OneLineParser, required=True)

    run = verbs.add_parser("run", help="profile SCRIPT (unmodified, or only its @profile functions), "
                                       "then write the report")
    run.add_argument("--output-dir", type=Path, default=Path("."),
                     help="where the .lprof, .meta.json and report files go (created if missing)")
    run.add_argument("--sample-gpu", action="store_true",
                     help="sample GPU utilisation/memory (NVML) and the job's CPU use about once a second")
    run.add_argument("--sample-interval", type=float, default=1.0, help="seconds between samples")
    run.add_argument("--num-workers", type=_non_negative_int, default=None,
                     help="the script's DataLoader workers, if it cannot be read from its arguments")
    run.add_argument("--trace-batches", type=_non_negative_int, default=500,
                     help="line-trace the training loader's first epoch, or this many batches if fewer, then "
                          "time the loop untraced (default 500; 0 = trace the whole run, try nothing)")
    run.add_argument("--try-workers", default="auto", metavar="auto|off|K,K,...",
                     help="where the loader holds the loop back, the worker counts the later epochs try in turn "
                          "(default auto: 1, 2, 4, 6, 8, 12, ... within the job's CPUs)")
    run.add_argument("--segment-seconds", type=float, default=2.0,
                     help="timed seconds per worker count per turn (default 2; at least twice the workers' "
                          "start, where that is longer; a turn also ends at an epoch's share, so that one round of "
                          "counts fits in an epoch, once it has timed a quarter of this)")
    run.add_argument("--curve-seconds", type=float, default=2.0,
                     help="when the run was too short to try worker counts, time its DataLoader at exit for "
                          "this many seconds per setting, each batch held for the loop's own step (the fallback "
                          "loader curve); 0 = skip")
    run.add_argument("--module", action="append", default=[], metavar="NAME",
                     help="also profile this module of your own (import name or path), for a training loop "
                          "that lives outside the script; repeat for more")
    run.add_argument("--formats", default="text,md,html,json,csv",
                     help="report files to write, comma-separated from: " + ",".join(FORMATS))
    _add_job_flags(run)
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="-- SCRIPT [ARGS...]",
                     help="the script to profile and its arguments")

    report = verbs.add_parser("report", help="read a .lprof and print the report (or write it with --output-dir)")
    report.add_argument("lprof", type=Path, metavar="FILE.lprof")
    report.add_argument("--format", choices=FORMATS, default="text", help="what to print (default: text)")
    report.add_argument("--num-workers", type=_non_negative_int, default=None,
                        help="the DataLoader workers of the profiled run (default: from <stem>.meta.json)")
    report.add_argument("--source-root", type=Path, default=None,
                        help="directory kernprof ran in, to find the source lines (default: from the metadata)")
    report.add_argument("--output-dir", type=Path, default=None,
                        help="also write every report file (text, md, json, csv, html, plots) here")
    report.add_argument("--curve", type=Path, default=None,
                        help="a loader curve `run` measured (default: <stem>.curve.json beside the profile); "
                             "without one the advice is an estimate")
    _add_job_flags(report)

    compare = verbs.add_parser("compare", help="speedup per phase between two .lprof files")
    compare.add_argument("before", type=Path, metavar="BEFORE.lprof")
    compare.add_argument("after", type=Path, metavar="AFTER.lprof")
    compare.add_argument("--output-dir", type=Path, default=None, help="also write the table and plot here")
    compare.add_argument("--format", choices=("text", "md", "json"), default="text")

    sweep = verbs.add_parser("sweep", help="measure throughput for each num_workers and find the knee",
                             description="Each setting runs here, held to its CPUs. On Slurm, one job per "
                                         "setting: python -m jobs submit sweep --script SCRIPT ... -- ARGS")
    sweep.add_argument("--workers", type=_worker_list, default=_worker_list(DEFAULT_WORKERS),
                       help=f"worker counts to try (default: {DEFAULT_WORKERS})")
    sweep.add_argument("--output-dir", type=Path, default=Path("sweep"), help="results, table and plot")
    sweep.add_argument("--gpus", type=_non_negative_int, default=None,
                       help="GPUs each setting trains with, for the CPU rule (default: what this machine shows)")
    sweep.add_argument("--repeats", type=_non_negative_int, default=1,
                       help="runs per setting, pass after pass; the median is kept (3 or more to judge a 5 %% knee)")
    sweep.add_argument("--batches", type=_non_negative_int, default=200,
                       help="batches per setting for a script without --metrics-json: then it is stopped "
                            "(default: 200)")
    sweep.add_argument("--lprof", type=Path, default=None,
                       help="a profile of the same script, to set the model's advice beside the sweep")
    sweep.add_argument("command", nargs=argparse.REMAINDER, metavar="-- SCRIPT [ARGS...]",
                       help="the training script and its arguments (no flag needed: the workers are set "
                            "on its DataLoaders)")
    return parser


def _script_command(parser: argparse.ArgumentParser, verb: str, command: list[str]) -> list[str]:
    """Drop the `--` separator and insist on a script that compiles (`script_problem`), before anything starts."""
    command = command[1:] if command[:1] == ["--"] else command
    if not command:
        parser.exit(EXIT_BAD_INPUT,
                    f"dlkit-prof {verb}: error: no script given (usage: dlkit-prof {verb} ... -- SCRIPT [ARGS...])\n")
    if problem := script_problem(command[0]):
        raise ProfileError(problem)
    return command


def _report_command(args: argparse.Namespace) -> int:
    from profiling.render import render
    from profiling.report import build_report, lprof_stem, write_report

    report = build_report(args.lprof, cpus=args.cpus, gpus=args.gpus, num_workers=args.num_workers,
                          source_root=args.source_root, cores_per_gpu=args.cores_per_gpu, curve_path=args.curve)
    if args.output_dir is not None:
        stem = lprof_stem(args.lprof, drop_script_suffix=True) or "profile"
        written = write_report(report, args.output_dir, stem, FORMATS)
        print(render(report, args.format, plot_paths=[p for p in written if p.suffix == ".png"]))
        print(f"\nwrote {len(written)} files to {args.output_dir}", file=sys.stderr)
    else:
        print(render(report, args.format))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.verb in ("run", "sweep"):
            args.command = _script_command(parser, args.verb, args.command)
        if args.verb == "report":
            return _report_command(args)
        module, function = LAZY_VERBS[args.verb]  # argparse took only the verbs it knows
        return getattr(importlib.import_module(module), function)(args)
    except ProfileError as err:
        print(f"dlkit-prof {args.verb}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:  # cannot read/write a path the user named: their input, not our bug
        print(f"dlkit-prof {args.verb}: error: {err.strerror or err}: {err.filename or ''}".rstrip(": "),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"dlkit-prof {args.verb}: interrupted", file=sys.stderr)
        return 130


def console_main() -> None:
    """`dlkit-prof`: main(), then exit at once: unloading pandas and matplotlib would cost every profiled job 0.25 s."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    console_main()
