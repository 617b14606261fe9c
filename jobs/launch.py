"""How a job script starts Python: the script or module, its arguments, and the launcher around it.

Stage one and a half of the checker: the commands of a JobScript (text) -> Launches (plain data).
Recognised, with any `module load`, `conda activate` or `source` lines around them (those start no
Python and are skipped): `python X.py`, `srun [opts] python X.py`, `uv run [opts] python X.py`,
`conda run -n ENV python X.py`, `apptainer exec IMAGE python X.py`, `torchrun [opts] X.py`,
`python -m torch.distributed.run`, `kernprof -l X.py`, `python -m pkg.mod`, and the kit's own
`python -m profiling run -- X.py`. Wrapped launches are found too: the command string of `bash -c "..."`
or `sh -c '...'` (after srun as well), and `python SCRIPT` inside any other tool's command line
(`<tool> hunt --trials 20 python main.py`), which the launch names (`via`). A tool known to start
several copies (mpirun, parallel, ...) leaves the count of processes unknown. torchrun's
`--nproc_per_node=$N` is read through the counts the job script set before it (jobs/shell_vars.py).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable
from pathlib import PurePosixPath

from jobs.shell_vars import GPU_COUNT, known_before, resolve, set_at

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
# srun options that take no value; every other long option without `=` takes the next word.
_SRUN_LONG_FLAGS = frozenset({
    "exclusive", "overlap", "unbuffered", "label", "kill-on-bad-exit", "no-kill", "overcommit",
    "oversubscribe", "pty", "quiet", "verbose", "exact", "whole", "multi-prog", "disable-status",
    "no-allocate", "test-only", "spread-job", "use-min-nodes", "contiguous", "hold", "reboot",
})
_SRUN_SHORT_FLAGS = frozenset("lukKvQOsEHXZh")
# Options of the tools in front of python that take a value.
_UV_WITH_VALUE = frozenset({"--with", "--project", "--directory", "--python", "-p", "--extra", "--group",
                            "--env-file", "--index", "--with-requirements", "--package", "--with-editable"})
_CONTAINER_WITH_VALUE = frozenset({"--bind", "-B", "--env", "--home", "-H", "--overlay", "-o", "--pwd", "-W",
                                   "--workdir", "--env-file", "--mount"})
_TORCHRUN_FLAGS = frozenset({"--standalone", "--no-python", "--no_python", "--run-path", "--run_path",
                             "--module", "-m"})
_KERNPROF_WITH_VALUE = frozenset({"-o", "--outfile", "-s", "--setup", "-p", "--prof-mod", "-i",
                                  "--output-interval", "-c", "--config"})
_PYTHON_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_SKIP_WORDS = frozenset({"exec", "time", "nohup", "command", "stdbuf", "env", "builtin", "do", "then", "else", "eval"})
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
# Commands whose arguments may name `python x.py` without running it.
_NOT_RUNNERS = frozenset({
    "echo", "printf", "cat", "grep", "egrep", "fgrep", "rg", "which", "type", "whereis", "test", "[", "[[",
    "export", "declare", "local", "readonly", "alias", "unset", "module", "ml", "source", ".", "cd", "ls",
    "mkdir", "rm", "cp", "mv", "ln", "touch", "chmod", "sed", "awk", "tee", "head", "tail", "wc", "sort",
    "find", "tar", "rsync", "scp", "git", "pip", "pip3", "conda", "mamba", "micromamba", "sbatch", "scancel",
    "squeue", "sacct", "scontrol", "sinfo", "sleep", "trap", "set", "shift", "wait", "kill", "if", "while",
    "until", "for", "case", "function", "return", "exit", "logger", "mail", "curl", "wget", "diff", "md5sum",
    # these run the command elsewhere, with other CPUs than this job's
    "ssh", "salloc", "ray", "kubectl", "qsub",
})
# Tools that start several copies of the command they wrap: the processes are not counted here.
_MANY_COPIES = frozenset({"mpirun", "mpiexec", "orterun", "horovodrun", "parallel", "xargs", "accelerate",
                          "deepspeed", "pdsh", "clush", "charmrun"})
_REDIRECT = re.compile(r"^\d*(>>?|<)(&\d)?")
_ARGS_OF_SCRIPT = frozenset({"$@", "${@}", "$*", "${*}"})


@dataclass(frozen=True)
class Launch:
    """One command of the job that starts a Python program."""

    command: str                     # the command as written, for messages
    script: str | None               # "train.py" as written, or None for `-m module`
    module: str | None               # "pkg.mod" for `python -m pkg.mod`
    args: tuple[str, ...]            # the arguments the program gets ("$@" replaced by sbatch's)
    launcher: str                    # "python", "torchrun", "kernprof", "profiling run"
    srun: bool = False
    srun_options: tuple[tuple[str, str | None], ...] = ()   # (long name, value) of srun's own options
    nproc_per_node: str | None = None  # torchrun's --nproc-per-node: "4", "gpu", or as written ("$N") if unknown
    nproc_from: str | None = None      # where a count held by a shell variable was set: "N=4 (line 12)"
    via: str | None = None             # the wrapper it was found in: "bash -c", "`tool hunt`"
    copies_unknown: bool = False       # the wrapper starts several copies (mpirun, parallel, ...)


def _segments(command: str) -> list[list[str]]:
    """The simple commands of one line: split at `;`, `&&`, `||`, `|` and `&`."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        words = command.split()
    segments: list[list[str]] = [[]]
    for word in words:
        if word and set(word) <= set(";&|"):
            segments.append([])
        else:
            segments[-1].append(word)
    return [seg for seg in segments if seg]


def _srun_options(words: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """srun's options (normalised to long names where they matter) and the command after them."""
    short = {"n": "ntasks", "N": "nodes", "c": "cpus-per-task", "G": "gpus"}
    options: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        word = words[i]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if not eq and name not in _SRUN_LONG_FLAGS:
                value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 1
            options.append((name, value if (eq or name not in _SRUN_LONG_FLAGS) else None))
        elif word[1] in _SRUN_SHORT_FLAGS:
            options.append((word[1], None))
        else:
            value = word[2:].lstrip("=")
            if not value:
                value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 1
            options.append((short.get(word[1], word[1]), value))
        i += 1
    return options, words[i + 1:] if i < len(words) and words[i] == "--" else words[i:]


def _skip_options(words: list[str], with_value: frozenset[str]) -> list[str]:
    """Drop a tool's leading options (and the values of those that take one)."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        if words[i] == "--":
            return words[i + 1:]
        i += 2 if words[i] in with_value else 1
    return words[i:]


def _unwrap(words: list[str]) -> tuple[list[str], bool, list[tuple[str, str | None]]]:
    """Peel env assignments, srun, uv run, conda run and containers off the front of a command."""
    srun, srun_options = False, []
    while words:
        head = PurePosixPath(words[0]).name
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or head in _SKIP_WORDS:
            words = words[1:]
        elif head == "srun":
            srun = True
            options, words = _srun_options(words[1:])
            srun_options.extend(options)
        elif head == "uv" and words[1:2] == ["run"]:
            words = _skip_options(words[2:], _UV_WITH_VALUE)
        elif head in {"conda", "mamba", "micromamba"} and words[1:2] == ["run"]:
            words = _skip_options(words[2:], frozenset({"-n", "--name", "-p", "--prefix", "--cwd"}))
        elif head in {"apptainer", "singularity"} and words[1:2] == ["exec"]:
            words = _skip_options(words[2:], _CONTAINER_WITH_VALUE)[1:]  # then the image
        else:
            break
    return words, srun, srun_options


def _program(words: list[str]) -> tuple[str, str | None, str | None, list[str], str | None] | None:
    """(launcher, script, module, args, nproc) of a command that starts Python, else None."""
    if not words:
        return None
    head = PurePosixPath(words[0]).name
    if _PYTHON.match(head):
        rest = _skip_python_options(words[1:])
        if rest[:1] == ["-m"] and len(rest) > 1:
            return _module(rest[1], rest[2:])
        if rest and not rest[0].startswith("-"):
            return "python", rest[0], None, rest[1:], None
        return None
    if head == "torchrun":
        return _torchrun(words[1:])
    if head == "kernprof":
        rest = _skip_options(words[1:], _KERNPROF_WITH_VALUE)
        return ("kernprof", rest[0], None, rest[1:], None) if rest else None
    if head.endswith(".py"):
        return "python", words[0], None, words[1:], None
    return None


def _skip_python_options(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] not in {"-m", "-c", "-"}:
        i += 2 if words[i] in _PYTHON_WITH_VALUE else 1
    return words[i:]


def _module(module: str, args: list[str]) -> tuple[str, str | None, str | None, list[str], str | None] | None:
    if module in {"torch.distributed.run", "torch.distributed.launch"}:
        return _torchrun(args)
    if module == "profiling" and args[:1] == ["run"]:
        rest = args[args.index("--") + 1:] if "--" in args else _skip_options(args[1:], frozenset(
            {"-o", "--output-dir", "--num-workers", "--formats", "--sample-interval"}))
        return ("profiling run", rest[0], None, rest[1:], None) if rest else None
    return "python", None, module, args, None


def _torchrun(words: list[str]) -> tuple[str, str | None, str | None, list[str], str | None] | None:
    nproc, i = None, 0
    while i < len(words) and words[i].startswith("-"):
        name, eq, value = words[i].partition("=")
        if name in {"-m", "--module"} and not eq:  # the program is a module
            break
        if not eq and name not in _TORCHRUN_FLAGS:
            value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 1
        if name.replace("_", "-") == "--nproc-per-node":
            nproc = value
        i += 1
    rest = words[i:]
    if rest[:1] in (["-m"], ["--module"]) and len(rest) > 1:
        return "torchrun", None, rest[1], rest[2:], nproc
    return ("torchrun", rest[0], None, rest[1:], nproc) if rest else None


def _shell_command(words: list[str]) -> str | None:
    """The command string of `bash -c "..."` / `sh -lc '...'`, else None."""
    if not words or PurePosixPath(words[0]).name not in _SHELLS:
        return None
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        if not words[i].startswith("--") and "c" in words[i][1:]:
            return words[i + 1] if i + 1 < len(words) else None
        i += 1
    return None


def _wrapped(words: list[str]) -> tuple[str, list[str]] | None:
    """(the tool's name, the python command) for `<tool> ... python SCRIPT ...`, else None."""
    if not words or PurePosixPath(words[0]).name in _NOT_RUNNERS | _SHELLS:
        return None
    for i in range(1, len(words)):
        head = PurePosixPath(words[i]).name
        if (_PYTHON.match(head) or head == "torchrun") and _program(words[i:]) is not None:
            tool = PurePosixPath(words[0]).name
            if i > 1 and re.fullmatch(r"[a-z][a-z0-9_-]*", words[1]) and not _PYTHON.match(words[1]):
                tool += f" {words[1]}"  # its sub-command, `tool hunt`
            return tool, words[i:]
    return None


def _expand_args(args: list[str], script_args: tuple[str, ...]) -> tuple[str, ...]:
    """The program's arguments: `"$@"` becomes sbatch's, the shell's redirections are dropped."""
    expanded: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif _REDIRECT.match(arg):  # `> log`, `2>&1`, `<in`: the shell's, not the program's
            skip = _REDIRECT.fullmatch(arg) is not None and not arg.endswith("&1")
        else:
            expanded.extend(script_args if arg in _ARGS_OF_SCRIPT else [arg])
    return tuple(expanded)


# What an enclosing `srun ... bash -c` gives the commands inside it: srun, its options, "bash -c".
_Outer = tuple[bool, list[tuple[str, str | None]], str | None]


def _from_command(command: str, text: str, script_args: tuple[str, ...], known: dict[str, str | None],
                  where: Callable[[str], str], outer: _Outer = (False, [], None)
                  ) -> list[Launch]:
    """The launches of one command line (`text`), looking inside `bash -c` once."""
    launches = []
    for segment in _segments(text):
        words, srun, srun_options = _unwrap(segment)
        srun, srun_options = srun or outer[0], [*outer[1], *srun_options]
        inner = _shell_command(words)
        if inner is not None and outer[2] is None:
            launches += _from_command(command, inner.replace("\n", ";"), script_args, known, where,
                                      (srun, srun_options, PurePosixPath(words[0]).name + " -c"))
            continue
        via, many = outer[2], False
        found = _program(words)
        if found is None and (tool := _wrapped(words)) is not None:
            via, many = f"`{tool[0]}`", PurePosixPath(words[0]).name in _MANY_COPIES
            inner_words, inner_srun, inner_options = _unwrap(tool[1])
            srun, srun_options = srun or inner_srun, [*srun_options, *inner_options]
            found = _program(inner_words)
        if found is None:
            continue
        launcher, script, module, args, nproc = found
        nproc_from = None
        if nproc is not None and "$" in nproc and (count := resolve(nproc, known)) is not None:
            name = re.sub(r"[:}].*", "", nproc.strip("\"'").lstrip("${"))
            said = "the GPUs the job asked for" if count == GPU_COUNT else count
            nproc_from = f"{nproc}, set to {said}{where(name)}" if name in known else f"{nproc}, {said}"
            nproc = count
        launches.append(Launch(command, script, module, _expand_args(args, script_args), launcher, srun,
                               tuple(srun_options), nproc, nproc_from, via, many))
    return launches


def find_launches(commands: tuple[str, ...], script_args: tuple[str, ...] = (),
                  lines: tuple[int, ...] = ()) -> tuple[Launch, ...]:
    """Every command that starts Python, in order; `"$@"` becomes the arguments given to sbatch.

    lines: each command's line in the job script, for messages about where a count was set."""
    launches: list[Launch] = []
    for i, (command, known) in enumerate(zip(commands, known_before(commands))):
        def where(name: str, i: int = i) -> str:
            j = set_at(commands, name, i)
            return f" at line {lines[j]}" if j is not None and j < len(lines) else ""

        launches += _from_command(command, command, script_args, known, where)
    return tuple(launches)
