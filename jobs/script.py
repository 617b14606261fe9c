"""Read an sbatch script the way sbatch does: its #SBATCH options and the commands it runs.

Stage one of the checker. It only reads text and returns plain data, so the rules (stage two)
can be tested on strings without Slurm. Options given on the sbatch command line override the
script's #SBATCH lines, exactly as sbatch does, so `dljobs sbatch -c 4 job.sbatch` is checked
with the 4 the job will really get.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

# sbatch's short options that take a value, and the long name we store them under.
SHORT_WITH_VALUE: dict[str, str] = {
    "A": "account", "a": "array", "b": "begin", "C": "constraint", "c": "cpus-per-task",
    "D": "chdir", "d": "dependency", "e": "error", "G": "gpus", "i": "input", "J": "job-name",
    "L": "licenses", "M": "clusters", "m": "distribution", "N": "nodes", "n": "ntasks",
    "o": "output", "p": "partition", "q": "qos", "S": "core-spec", "t": "time", "w": "nodelist",
    "x": "exclude",
}
# sbatch's short flags that take no value.
SHORT_FLAGS: dict[str, str] = {
    "H": "hold", "h": "help", "k": "no-kill", "O": "overcommit", "Q": "quiet", "s": "oversubscribe",
    "V": "version", "v": "verbose", "W": "wait",
}
# Long options that take no value (the rest of the long options take one).
LONG_FLAGS: frozenset[str] = frozenset({
    "contiguous", "exclusive", "get-user-env", "help", "hold", "ignore-pbs", "no-kill",
    "no-requeue", "overcommit", "oversubscribe", "parsable", "quiet", "requeue", "reboot",
    "spread-job", "test-only", "usage", "use-min-nodes", "verbose", "version", "wait",
})

# Lines a quoted string may span before it is taken for a stray quote.
_QUOTED_LINES = 40
# A checker waiver: `# dljobs: allow RULE[,RULE]` anywhere in the script.
_WAIVER = re.compile(r"#\s*dljobs:\s*allow\s+([\w,\s-]+)")


@dataclass(frozen=True)
class Option:
    """One sbatch option as written: where it came from matters for the message."""

    name: str            # long name without dashes, e.g. "cpus-per-task"
    value: str | None    # None for flags such as --requeue
    where: str           # "line 7" or "command line"


@dataclass(frozen=True)
class JobScript:
    """An sbatch job: its effective options (last one wins, command line last) and its commands."""

    path: str
    options: dict[str, Option]
    commands: tuple[str, ...]          # logical lines after the directives, continuations joined
    waived: frozenset[str] = field(default_factory=frozenset)
    script_args: tuple[str, ...] = ()  # arguments given after the script on the sbatch line
    command_lines: tuple[int, ...] = ()  # the line each command starts on, for messages

    def get(self, name: str) -> str | None:
        """The option's value, or None when the script does not set it."""
        opt = self.options.get(name)
        return opt.value if opt else None

    def has(self, name: str) -> bool:
        return name in self.options


def _normalise(arguments: list[str], where: str) -> list[Option]:
    """Turn sbatch-style arguments (`-c4`, `-c 4`, `--time=1:00`, `--time 1:00`) into Options."""
    out: list[Option] = []
    i = 0
    while i < len(arguments):
        arg = arguments[i]
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if eq:
                out.append(Option(name, value, where))
            elif name in LONG_FLAGS:
                out.append(Option(name, None, where))
            else:
                value_next = arguments[i + 1] if i + 1 < len(arguments) else None
                out.append(Option(name, value_next, where))
                i += 1
        elif arg.startswith("-") and len(arg) >= 2:
            key = arg[1]
            if key in SHORT_FLAGS:
                out.append(Option(SHORT_FLAGS[key], None, where))
            elif key in SHORT_WITH_VALUE:
                if len(arg) > 2:
                    out.append(Option(SHORT_WITH_VALUE[key], arg[2:].lstrip("="), where))
                else:
                    value_next = arguments[i + 1] if i + 1 < len(arguments) else None
                    out.append(Option(SHORT_WITH_VALUE[key], value_next, where))
                    i += 1
            else:
                out.append(Option(f"-{key}", arg[2:] or None, where))
        i += 1
    return out


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Physical lines joined at trailing backslashes, each with its first line number."""
    joined: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not buffer:
            start = number
        if line.rstrip().endswith("\\") and not line.lstrip().startswith("#"):
            buffer += line.rstrip()[:-1] + " "
            continue
        joined.append((start, buffer + line))
        buffer = ""
    if buffer:
        joined.append((start, buffer))
    return _close_quotes(joined)


def _open_quote(text: str) -> bool:
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return True
    return False


def _close_quotes(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A quote left open runs on over the next lines, as in bash (`srun bash -c "` ... `"`): those
    lines are one command. A quote that never closes within _QUOTED_LINES leaves the lines as they are."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        start, text = lines[i]
        j = i
        while _open_quote(text) and j + 1 < len(lines) and j - i < _QUOTED_LINES:
            j += 1
            text += "\n" + lines[j][1]
        if _open_quote(text):
            out.append(lines[i])
            i += 1
            continue
        out.append((start, text))
        i = j + 1
    return out


def _split_directive(rest: str) -> list[str]:
    """The words of one #SBATCH line; a ` #` starts a comment, as in sbatch."""
    try:
        return shlex.split(rest, comments=True)
    except ValueError:  # an unbalanced quote: keep the words anyway, the rules will complain
        return rest.split("#", 1)[0].split()


def parse_script(text: str, path: str = "<script>") -> JobScript:
    """Parse a script's #SBATCH lines and its commands.

    sbatch stops reading #SBATCH lines at the first command, so directives after it are ignored
    here too (and they are a classic mistake the rules could point at later).
    """
    options: dict[str, Option] = {}
    commands: list[str] = []
    lines: list[int] = []
    waived: set[str] = set()
    in_header = True
    for number, line in _logical_lines(text):
        stripped = line.strip()
        for match in _WAIVER.finditer(stripped):
            waived.update(w.strip() for w in match.group(1).replace(",", " ").split() if w.strip())
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        if stripped.startswith("#SBATCH"):
            if in_header:
                for opt in _normalise(_split_directive(stripped[len("#SBATCH"):]), f"line {number}"):
                    options[opt.name] = opt
            continue
        in_header = False
        commands.append(stripped)
        lines.append(number)
    return JobScript(path=path, options=options, commands=tuple(commands), waived=frozenset(waived),
                     command_lines=tuple(lines))


def split_sbatch_argv(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """Split an sbatch command line into (options, script path, script arguments)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return argv[:i], (argv[i + 1] if i + 1 < len(argv) else None), argv[i + 2:]
        if not arg.startswith("-") or arg == "-":
            return argv[:i], arg, argv[i + 1:]
        takes_value = (
            (arg.startswith("--") and "=" not in arg and arg[2:] not in LONG_FLAGS)
            or (not arg.startswith("--") and len(arg) == 2 and arg[1] in SHORT_WITH_VALUE)
        )
        i += 2 if takes_value else 1
    return argv, None, []


def with_command_line(job: JobScript, sbatch_options: list[str], script_args: list[str]) -> JobScript:
    """The job as sbatch will see it: command-line options override the #SBATCH lines."""
    options = dict(job.options)
    for opt in _normalise(sbatch_options, "command line"):
        options[opt.name] = opt
    return JobScript(job.path, options, job.commands, job.waived, tuple(script_args), job.command_lines)


def read_script(path: str | Path) -> JobScript:
    """Read and parse a script file. Raises OSError/UnicodeDecodeError for the CLI to report."""
    return parse_script(Path(path).read_text(encoding="utf-8"), str(path))
