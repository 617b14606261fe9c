"""Counts a job script sets in shell variables before it starts Python: `num_gpus=4`, then
`torchrun --nproc_per_node=$num_gpus`.

Pure text, like jobs/launch.py, which uses it. A variable counts only when the script gives it one
value: a number, another known variable, `$SLURM_GPUS_ON_NODE`, or a command that counts the GPUs
the job can see (`$(nvidia-smi -L | wc -l)`, `torch.cuda.device_count()`), which is the GPUs the job
asked for and is returned as "gpu", the word torchrun itself takes for that count. A variable given
two different values, or one the reader cannot follow, is unknown (None): no count is guessed.
"""
from __future__ import annotations

import re

# A whole line that sets one variable: `N=4`, `export N=4`, `declare -i N=4`, `local N=4`.
_ASSIGN = re.compile(r"^(?:(?:export|declare|typeset|local|readonly)\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)=(\S.*|)$")
# Other ways a line changes a variable, which make its value unknown: `N+=1`, `let N=...`, `((N++))`, `read N`.
_CHANGES = re.compile(r"(?:^|[\s;(])(?:let\s+)?([A-Za-z_]\w*)(?:\+=|\+\+|--|\s*[-+*/]?=)")
_READ = re.compile(r"^read\s+(?:-\w+\s+)*([A-Za-z_]\w*)")
_VARIABLE = re.compile(r"^\$(?:\{([A-Za-z_]\w*)(?::?-(\d+))?\}|([A-Za-z_]\w*))$")
# Commands that print how many GPUs the job can see.
_GPU_COUNTERS = (re.compile(r"nvidia-smi\s+(?:-L|--list-gpus)\b.*\|\s*(?:wc\s+-l|grep\s+-c)"),
                 re.compile(r"nvidia-smi\s+--query-gpu=\S+.*\|\s*wc\s+-l"),
                 re.compile(r"torch\.cuda\.device_count\(\)"))
GPU_COUNT = "gpu"
_GPU_VARIABLES = frozenset({"SLURM_GPUS_ON_NODE"})


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    return value


def resolve(value: str, known: dict[str, str | None]) -> str | None:
    """A count as written (`4`, `$N`, `${N}`, `$(nvidia-smi -L | wc -l)`): its digits, "gpu", or None."""
    value = _unquote(value)
    if value.isdigit():
        return value
    if value.startswith(("$(", "`")) and value.endswith((")", "`")):
        return GPU_COUNT if any(p.search(value) for p in _GPU_COUNTERS) else None
    match = _VARIABLE.match(value)
    if match is None:
        return None
    name = match.group(1) or match.group(3)
    if name in known:
        return known[name]
    return GPU_COUNT if name in _GPU_VARIABLES else None


def known_before(commands: tuple[str, ...]) -> list[dict[str, str | None]]:
    """For each command, the counts its variables hold when it runs (set by the lines above it)."""
    known: dict[str, str | None] = {}
    out: list[dict[str, str | None]] = []
    for command in commands:
        out.append(dict(known))
        text = command.split(" #", 1)[0].strip()
        match = _ASSIGN.match(text)
        if match and (match.group(2).startswith(("$(", "`")) or not any(c in match.group(2) for c in ";&")):
            name, value = match.group(1), resolve(match.group(2), known)
            known[name] = value if known.get(name, value) == value else None  # two values: unknown
            continue
        for changed in [*_CHANGES.findall(text), *_READ.findall(text)]:
            known[changed] = None
    return out


def set_at(commands: tuple[str, ...], name: str, before: int) -> int | None:
    """The index of the last command above `before` that assigns `name`, if any."""
    for i in range(min(before, len(commands)) - 1, -1, -1):
        match = _ASSIGN.match(commands[i].split(" #", 1)[0].strip())
        if match and match.group(1) == name:
            return i
    return None
