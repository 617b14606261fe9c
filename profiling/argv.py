"""Reading a training script's command line and source without importing the script: the small checks and
scans that `run`, the sweep, the job facts and the job launcher each need."""
from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from pathlib import Path


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
    return True if on in args else False if off is not None and off in args else None


def strip_flags(args: list[str], flags: tuple[str, ...]) -> list[str]:
    """Remove `--flag V` / `--flag=V` so that the caller's own values are the only ones."""
    out, rest = [], iter(args)
    for arg in rest:
        if arg in flags:
            next(rest, None)  # its value
        elif not any(arg.startswith(f + "=") for f in flags):
            out.append(arg)
    return out


def shown(where: str, root: str = ".") -> str:
    """`file` or `file:line` as a report names it: relative to where the run started where the file lies below it (a
    module the script imports is recorded by its absolute path, the script as it was given: unseen q_2)."""
    file, colon, line = where.rpartition(":") if where.rpartition(":")[2].isdigit() else (where, "", "")
    if os.path.isabs(file) and not (relative := os.path.relpath(file, root)).startswith(".."):
        file = relative
    return file + colon + line


def parse_script(path: Path) -> ast.Module | None:
    """The source's syntax tree (None if unreadable); never imported: a training script would start training here."""
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def script_nodes(path: Path) -> Iterator[ast.AST]:
    """Every node of the source's tree (`parse_script`); none where it cannot be read or parsed."""
    return ast.walk(parse_script(path) or ast.Module([], []))


def declared_default(script: Path, flag: str) -> object | None:
    """The literal `default=` of `add_argument(flag, ...)` in the script's source (`script_nodes`), if any."""
    for call in script_nodes(script):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"
                and any(isinstance(a, ast.Constant) and a.value == flag for a in call.args)):
            default = next((kw.value for kw in call.keywords if kw.arg == "default"), None)
            return default.value if isinstance(default, ast.Constant) else None
    return None


def script_problem(script: str) -> str | None:
    """Why SCRIPT cannot be profiled (None when it compiles), checked before anything starts: otherwise a typo
    in the path costs a kernprof start-up, leaves a `.meta.json` and ends in "was the @profile function called?"."""
    path = Path(script)
    if not path.exists():
        return f"no such script: {script}"
    if path.is_dir():
        return f"{script} is a folder, not a Python script"
    try:
        compile(path.read_bytes(), script, "exec", dont_inherit=True)
    except OSError as err:
        return f"cannot read {script}: {err.strerror or err}"
    except SyntaxError as err:
        return f"{script} is not valid Python (line {err.lineno}: {err.msg})"
    except ValueError as err:  # null bytes: a binary file
        return f"{script} is not a Python source file ({err})"
    return None


def output_stem(script: str, environ: dict[str, str] | None = None) -> str:
    """The Slurm job id inside a job (the lessons' convention), else the script's name."""
    environ = os.environ if environ is None else environ
    return environ.get("SLURM_JOB_ID", "").strip() or Path(script).stem or "profile"  # job id: unique per array task
