"""`python -m jobs` / `dljobs`: check job scripts, submit them with the site settings, gather sweeps.

    dljobs check [--sacct] FILE...            refuse unsafe or inconsistent sbatch scripts
    dljobs sbatch [sbatch options] SCRIPT [args]   check, then sbatch with jobs/site.env applied
    dljobs gather DIR [--workers 0,1,2]       one table and plot from a sweep array's results
    dljobs rules                              the checker's rules, one line each
    dljobs submit ...                         the submitit launcher (jobs/submit.py)

Bad input gives one clear line on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from jobs.rules import RULES, Finding, check
from jobs.script import read_script, split_sbatch_argv, with_command_line
from jobs.site import SiteError, read_site, site_file, submit_environment
from profiling.records import ProfileError

BAD_INPUT = 2


def _fail(message: str) -> int:
    print(f"dljobs: error: {message}", file=sys.stderr)
    return BAD_INPUT


def _report(findings: list[Finding]) -> bool:
    """Print findings one line each; True when any is an error."""
    for finding in findings:
        print(finding.line(), file=sys.stderr)
    return any(f.level == "error" for f in findings)


def check_command(files: list[str], sacct: bool = False) -> int:
    """Exit 2 when any file has an error or cannot be read; warnings and notes alone exit 0.

    The Python scripts a job starts are looked up from the current folder (where sbatch runs)."""
    failed = False
    for name in files:
        try:
            job = read_script(name)
        except (OSError, UnicodeDecodeError) as err:
            print(f"{name}: error[unreadable]: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
            failed = True
            continue
        findings = check(job, root=Path.cwd(), sacct=sacct)
        failed |= _report(findings)
        if not any(f.level in ("error", "warning") for f in findings):
            print(f"{name}: ok")
    return BAD_INPUT if failed else 0


def sbatch_command(argv: list[str]) -> int:
    """Check the job as sbatch will see it (command-line options included), then submit it."""
    options, script, script_args = split_sbatch_argv(argv)
    if script is None:
        return _fail("usage: dljobs sbatch [sbatch options] SCRIPT [script arguments]")
    try:
        job = with_command_line(read_script(script), options, script_args)
    except (OSError, UnicodeDecodeError) as err:
        return _fail(f"cannot read {script}: {getattr(err, 'strerror', None) or err}")
    if _report(check(job, root=Path.cwd())):
        print(f"dljobs: not submitted: fix the error(s) above in {script}", file=sys.stderr)
        return BAD_INPUT
    try:
        path = site_file(os.environ)
        env = submit_environment(read_site(path), os.environ, path)
    except SiteError as err:
        return _fail(str(err))
    if shutil.which("sbatch") is None:
        return _fail("sbatch not found: run this on a Slurm login node (or start the sandbox: make slurm-up)")
    return subprocess.run(["sbatch", *argv], env=env).returncode


def gather_command(args: argparse.Namespace) -> int:
    from jobs.gather import advice_from, collect, parse_workers
    from profiling.sweep import write_outputs

    directory = Path(args.directory)
    if not directory.is_dir():
        return _fail(f"no sweep folder {directory}: did the array run, and with this job id?")
    listed = directory / "workers.txt"
    if args.workers is None and not listed.is_file():
        return _fail(f"no {listed} (no task of the array started): give the settings with --workers")
    try:
        workers = parse_workers(listed.read_text(encoding="utf-8").strip() if args.workers is None
                                else args.workers)
        advice, source = advice_from(Path(args.lprof) if args.lprof else None)
    except (ValueError, OSError, ProfileError) as err:
        return _fail(str(err))
    results = collect(directory, workers)
    if (results["status"] != "ok").all():  # nothing to tabulate: keep the folder as it is
        return _fail(f"no results in {directory} for num_workers={','.join(map(str, workers))}: "
                     "did the array run, and with this job id? (each task writes w<N>.json)")
    text = write_outputs(directory, results, advice, source)
    print(text + f"\nwrote {directory}/sweep.csv, sweep.txt, sweep.json and sweep.png")
    failed = results[results["status"] != "ok"]
    for row in failed.itertuples():
        print(f"gather: num_workers={row.workers} failed: {row.detail}", file=sys.stderr)
    return 1 if len(failed) else 0


def rules_command() -> int:
    for rule in RULES:
        print(f"{rule.level:7}  {rule.id:24}  {rule.message}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dljobs", description=__doc__.split("\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    check_p = verbs.add_parser("check", help="check sbatch scripts before submitting them")
    check_p.add_argument("files", nargs="+", metavar="FILE")
    check_p.add_argument("--sacct", action="store_true",
                         help="also ask sacct for an earlier run of the same job name (MaxRSS), for the memory rule")
    sbatch_p = verbs.add_parser("sbatch", help="check, then submit with the site settings", add_help=False)
    sbatch_p.add_argument("argv", nargs=argparse.REMAINDER)
    gather_p = verbs.add_parser("gather", help="table and plot from a sweep array's results")
    gather_p.add_argument("directory", metavar="DIR")
    gather_p.add_argument("--workers", help="the settings, e.g. 0,1,2,4 (default: DIR/workers.txt)")
    gather_p.add_argument("--lprof", help="a baseline profile whose advice is set beside the knee")
    verbs.add_parser("rules", help="list the checker's rules")
    submit_p = verbs.add_parser("submit", help="the submitit launcher (see jobs/submit.py)", add_help=False)
    submit_p.add_argument("argv", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # sbatch and submit take their own options verbatim: do not let argparse look at them.
    if argv[:1] == ["sbatch"]:
        return sbatch_command(argv[1:])
    if argv[:1] == ["submit"]:
        from jobs.submit import main as submit_main

        return submit_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.verb == "check":
        return check_command(args.files, args.sacct)
    if args.verb == "gather":
        return gather_command(args)
    return rules_command()
