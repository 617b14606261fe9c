"""Run the lessons the way a learner would, and stop at the first command that fails.

    python -m lessons.runner                 # every lesson, in a fresh copy of the kit
    python -m lessons.runner 02 03 --keep    # some lessons (still in order); keep the copy

``run`` blocks are executed with bash in the copy's root, one lesson at a time, the shell's
working directory and exported variables carried from one block to the next (as in one
terminal). ``expected`` blocks are checked for shape against the output of the block before
them (or a file, with ``file=``). ``cluster`` and ``setup`` blocks are checked without running
them: see ``lessons/static_checks.py``.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lessons.blocks import Block, extract, lesson_files
from lessons.shape import mismatch
from lessons.static_checks import static_problems

REPO = Path(__file__).resolve().parents[1]
# A block's time limit guards against a hang, never against slowness: on a loaded 2-core CI machine
# the longest default block (lesson 04's four speed-up runs) took 174 s, about 4x its quiet time.
DEFAULT_TIMEOUT_S = 600
# Variables bash owns (or that describe the old shell): never carried to the next block.
_BASH_OWN = ("BASH*|PWD|OLDPWD|SHLVL|_|PIPESTATUS|FUNCNAME|GROUPS|DIRSTACK|RANDOM|SRANDOM|SECONDS|"
             "LINENO|HISTCMD|EPOCH*|COMP_*|OPTIND|OPTERR|OPTARG|PPID|UID|EUID|SHELLOPTS|IFS|PS?|"
             "HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|__lesson_var")


class LessonFailure(AssertionError):
    """A lesson step failed; the message says which lesson, block and why, with the output."""


@dataclass
class Shell:
    """The state a learner's terminal keeps between blocks of one lesson: directory and variables."""

    root: Path
    env: dict[str, str]
    cwd: Path = field(init=False)
    state: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.root
        self.state = Path(tempfile.mkstemp(prefix="lesson-state-", suffix=".sh")[1])
        self.state.write_text("")

    def run(self, text: str, timeout: float) -> tuple[int, str]:
        """Run one block; return its exit code and its stdout+stderr interleaved."""
        script = (
            f"source {self.state}\n"
            f"cd {self.cwd}\n"
            "trap 'for __lesson_var in $(compgen -v); do case $__lesson_var in "
            f"{_BASH_OWN}) ;; *) declare -p $__lesson_var 2>/dev/null;; esac; done > {self.state}.new; "
            f"pwd > {self.state}.cwd' EXIT\n"
            "set -eo pipefail\n" + text
        )
        try:
            proc = subprocess.run(
                ["bash", "-c", script], cwd=self.cwd, env=self.env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
            )
            code, output = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired as err:
            out = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else err.stdout or ""
            return 124, out + f"\n[lessons.runner: timed out after {timeout:.0f} s]"
        self._keep_state()
        return code, output

    def close(self) -> None:
        """Remove the state files, so that lessons leave nothing behind in the temporary folder."""
        for path in (self.state, Path(f"{self.state}.new"), Path(f"{self.state}.cwd")):
            path.unlink(missing_ok=True)

    def _keep_state(self) -> None:
        new, cwd = Path(f"{self.state}.new"), Path(f"{self.state}.cwd")
        if new.exists():
            new.replace(self.state)
        if cwd.exists():
            self.cwd = Path(cwd.read_text().strip() or self.root)
            cwd.unlink()


def learner_env(root: Path, python: str) -> dict[str, str]:
    """The environment of a learner who activated the kit's venv in a fresh checkout at ``root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SRUN_", "SBATCH_"))}
    bindir = str(Path(python).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(Path(bindir).parent)
    # The checkout's own modules win over any editable install of another checkout.
    env["PYTHONPATH"] = str(root)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("MNIST_DATA", None)
    return env


def fresh_copy(dest: Path, source: Path = REPO) -> Path:
    """Copy what a ``git clone`` would hold (tracked files, plus new files git does not ignore)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = source / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def provide_setup(root: Path, python: str) -> None:
    """What lesson 00's ``setup`` blocks leave behind, without the slow install: the ``.venv``.

    The job scripts activate ``.venv`` (see jobs/site.env), so the copy gets a link to the
    environment running the tests; nothing is installed into it.
    """
    venv = root / ".venv"
    if not venv.exists():
        venv.symlink_to(Path(python).parent.parent, target_is_directory=True)


def _fail(block: Block, why: str, command: str = "", output: str = "") -> LessonFailure:
    tail = "\n".join(output.splitlines()[-80:])
    parts = [f"{block.where} ({block.lang} {block.mode}): {why}"]
    if command:
        parts.append("--- block ---\n" + command.rstrip())
    if output:
        parts.append("--- output (last 80 lines) ---\n" + tail)
    return LessonFailure("\n".join(parts))


def _expected_against(block: Block, shell: Shell, last_output: str | None) -> str:
    """The text an ``expected`` block is compared with: a file (``file=``) or the last output."""
    if "file" in block.options:
        matches = sorted(glob.glob(str(shell.cwd / block.options["file"])), key=os.path.getmtime)
        if not matches:
            raise _fail(block, f"file {block.options['file']!r} does not exist (in {shell.cwd})")
        return Path(matches[-1]).read_text(errors="replace")
    if last_output is None:
        raise _fail(block, "an expected block must follow a run block (or name a file=)")
    return last_output


def run_lesson(path: Path, root: Path, python: str, log=print, show: bool = False) -> float:
    """Run one lesson in the checkout at ``root``; raise LessonFailure at the first problem."""
    shell = Shell(root, learner_env(root, python))
    started = time.monotonic()
    try:
        last_output: str | None = None
        for block in extract(path):
            if block.is_shell and block.mode == "run":
                t0 = time.monotonic()
                want = int(block.options.get("exit", "0"))
                code, output = shell.run(block.text, float(block.options.get("timeout", DEFAULT_TIMEOUT_S)))
                log(f"  {block.where} run: exit {code} in {time.monotonic() - t0:.1f} s")
                if show:
                    log(output)
                if code != want:
                    raise _fail(block, f"exit code {code}, expected {want}", block.text, output)
                last_output = output
            elif block.is_shell and block.mode in ("cluster", "setup"):
                problems = static_problems(block, root, shell.env)
                log(f"  {block.where} {block.mode}: {'checked' if not problems else 'FAILED'}")
                if problems:
                    raise _fail(block, "static check failed:\n  " + "\n  ".join(problems), block.text)
            elif block.mode == "expected":
                free = [k for k in block.options.get("free", "").split(",") if k]
                problem = mismatch(block.lang, block.text, _expected_against(block, shell, last_output), free)
                if problem:
                    raise _fail(block, "output does not have the excerpt's shape: " + problem,
                                block.text, last_output or "")
    finally:
        shell.close()
    return time.monotonic() - started


def run_all(selected: list[Path], root: Path, python: str, log=print, show: bool = False) -> dict[str, float]:
    """Run lessons in order; return seconds per lesson."""
    times: dict[str, float] = {}
    for path in selected:
        log(f"{path.name}:")
        times[path.name] = run_lesson(path, root, python, log, show)
    return times


def _select(names: list[str]) -> list[Path]:
    every = lesson_files(REPO / "lessons")
    if not names:
        return every
    chosen = [p for p in every if any(p.name.startswith(n) or p.name == n for n in names)]
    if not chosen:
        raise SystemExit(f"lessons.runner: no lesson matches {names}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lessons.runner", description=__doc__.split("\n")[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers or file names (default: all)")
    parser.add_argument("--workdir", type=Path, help="run here instead of a fresh temporary copy")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    parser.add_argument("--show", action="store_true", help="print every run block's output (to write excerpts)")
    args = parser.parse_args(argv)
    selected = _select(args.lessons)
    # --workdir . re-runs a lesson in your own checkout (to make an earlier lesson's results again).
    root = args.workdir.resolve() if args.workdir else fresh_copy(Path(tempfile.mkdtemp(prefix="lessons-")))
    provide_setup(root, sys.executable)
    print(f"lessons.runner: running {len(selected)} lesson(s) in {root}")
    started = time.monotonic()
    try:
        times = run_all(selected, root, sys.executable, show=args.show)
    except LessonFailure as err:
        print(f"lessons.runner: FAILED\n{err}", file=sys.stderr)
        return 1
    finally:
        if not (args.keep or args.workdir):
            shutil.rmtree(root, ignore_errors=True)
    for name, seconds in times.items():
        print(f"{seconds:7.1f} s  {name}")
    print(f"{time.monotonic() - started:7.1f} s  total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
