"""Read a training script's DataLoader workers from its source, never by importing or running it.

Why static: the job checker runs before `sbatch` on a login node, in well under a second. Importing
a training script would import torch and may start training. So the script is parsed with `ast`
and only the shapes people write are followed:

    DataLoader(ds, num_workers=4)                            a literal
    kwargs = {"num_workers": 1, ...}; DataLoader(ds, **kwargs)   a kwargs dict (also .update, dict(...))
    if use_cuda: kwargs.update({"num_workers": 1})           set only under CUDA
    parser.add_argument("--workers", default=4) ... args.workers   a flag: its default, or the
                                                             value given on the job's command line
    int(os.environ["SLURM_CPUS_PER_TASK"]), len(os.sched_getaffinity(0)), os.cpu_count()
    def cpus(): return int(os.environ["SLURM_CPUS_PER_TASK"]) - 1  one level into the script's own
                                                             function or method, or a module beside it
    SomeDataModule(num_workers=8)                            any call's `num_workers=`, when no
                                                             DataLoader(...) call gives the number

Anything else (a value from a config file, a function's parameter, arithmetic on unknowns, a
helper that calls another helper) is reported as unknown: the caller says nothing about a number
it cannot know.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import Path

from jobs.workers_helpers import AFFINITY, CPU_VARIABLES, Function, definitions, returns
from jobs.workers_index import ScriptIndex, mentions_cuda
from profiling.argv import flag_value

# A command-line value that is the task's CPUs: $SLURM_CPUS_PER_TASK, ${...}, $((SLURM_CPUS_PER_TASK - 1)).
_SHELL_CPUS = re.compile(r"^\$(?:\{SLURM_CPUS_PER_TASK\}|SLURM_CPUS_PER_TASK|\(\(\s*\$?SLURM_CPUS_PER_TASK\s*"
                         r"(?:-\s*(\d+)\s*)?\)\))$")
_MAX_DEPTH = 12  # names that refer to names: stop rather than loop


@dataclass(frozen=True)
class Workers:
    """The num_workers a script's DataLoader gets, and where that number came from.

    value is None when it cannot be known from the text (or follows the node's cores, which the
    script's reader cannot know). `follows_cpus` means value = the CPUs the process sees + offset.
    """

    value: int | None
    where: str                 # "train.py:41": the line that holds the number
    how: str                   # "literal", "the default of --workers", "SLURM_CPUS_PER_TASK", ...
    cuda_only: bool = False    # set only when CUDA is available (an `if use_cuda:` branch)
    follows_cpus: bool = False
    node_cores: bool = False   # os.cpu_count(): every core of the node, not the job's share


@dataclass(frozen=True)
class ScriptRead:
    """What was read from one script: its workers (None: no DataLoader found), or why it was not read."""

    path: str
    workers: Workers | None = None
    problem: str | None = None  # set when the script could not be read at all


class _Evaluator:
    """Turn one expression into Workers, following names, dicts and argparse flags."""

    def __init__(self, index: ScriptIndex, name: str, argv: list[str], cpus: int | None,
                 env: dict[str, int] | None = None, folder: Path | None = None) -> None:
        self.index, self.name, self.argv, self.cpus = index, name, argv, cpus
        # The CPU variables the process sees (unset ones are absent); by default the task's CPUs.
        self.env = env if env is not None else ({} if cpus is None else {"SLURM_CPUS_PER_TASK": cpus})
        self.folder = folder          # where modules the script imports are looked for (None: not looked)
        self.in_helper = False        # inside a followed function: its calls are not followed again
        self.scope = ""  # the function whose names are looked up (set per DataLoader call)
        self.active: set[str] = set()  # names and dicts being resolved now: a cycle is unknown, not a hang

    def at(self, node: ast.AST) -> str:
        return f"{self.name}:{getattr(node, 'lineno', '?')}"

    def unknown(self, node: ast.AST, how: str) -> Workers:
        return Workers(None, self.at(node), how)

    def expr(self, node: ast.expr, depth: int = 0) -> Workers:
        if depth > _MAX_DEPTH:
            return self.unknown(node, "too many indirections")
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return Workers(node.value, self.at(node), "literal")
        if isinstance(node, ast.IfExp):
            return self._if_exp(node, depth)
        if isinstance(node, ast.Name):
            return self._name(node, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return self._flag(node)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Subscript):
            return self._environ(node, node.slice, None)
        if isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant) \
                and isinstance(node.right.value, int) and isinstance(node.op, (ast.Sub, ast.Add, ast.FloorDiv)):
            return self._arithmetic(node, depth)
        return self.unknown(node, f"`{ast.unparse(node)}`")

    def _if_exp(self, node: ast.IfExp, depth: int) -> Workers:
        body, other = self.expr(node.body, depth + 1), self.expr(node.orelse, depth + 1)
        if body.value == other.value and body.value is not None:
            return body
        if mentions_cuda(node.test):
            return replace(body, cuda_only=True)
        return self.unknown(node, f"`{ast.unparse(node)}`")

    def _name(self, node: ast.Name, depth: int) -> Workers:
        values = self.index.lookup(self.index.assigned, self.scope, node.id)
        if not values:
            return self.unknown(node, f"`{node.id}` (not assigned in this file)")
        if node.id in self.active:  # `n = n + 1`: a value that depends on itself is not known
            return self.unknown(node, f"`{node.id}`, which depends on itself")
        self.active.add(node.id)
        try:
            found = [replace(w, cuda_only=w.cuda_only or cuda) for value, cuda in values
                     for w in [self.expr(value, depth + 1)]]
        finally:
            self.active.discard(node.id)
        return _one_of(found, self.unknown(node, f"`{node.id}`, assigned several ways"))

    def _flag(self, node: ast.Attribute) -> Workers:
        call = self.index.flags.get(node.attr)
        if call is None or not (node.value.id in self.index.parsed or node.value.id in {"args", "opt", "opts"}):
            return self.unknown(node, f"`{ast.unparse(node)}`")
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        given = [v for v in (flag_value(self.argv, n) for n in names) if v is not None]
        shown = next((n for n in names if n.startswith("--")), names[0] if names else node.attr)
        if given:
            return self._command_line(given[-1], shown)
        default = next((kw.value for kw in call.keywords if kw.arg == "default"), None)
        where = f"{self.name}:{call.lineno}"
        if isinstance(default, ast.Constant) and isinstance(default.value, int) \
                and not isinstance(default.value, bool):
            return Workers(default.value, where, f"the default of {shown}")
        if default is not None:
            return replace(self.expr(default), how=f"the default of {shown}: `{ast.unparse(default)}`")
        return Workers(None, where, f"{shown} has no default")

    def _command_line(self, value: str, flag: str) -> Workers:
        if value.isdigit():
            return Workers(int(value), "the job's command line", f"{flag} {value}")
        match = _SHELL_CPUS.match(value)
        cpus = self.env.get("SLURM_CPUS_PER_TASK")  # unset: the shell passes an empty word
        if match and cpus is not None:
            offset = int(match.group(1) or 0)
            return Workers(max(cpus - offset, 0), "the job's command line", f"{flag} {value}", follows_cpus=True)
        return Workers(None, "the job's command line", f"{flag} {value}")

    def _call(self, node: ast.Call, depth: int) -> Workers:
        func = ast.unparse(node.func)
        if func in {"int", "float"} and len(node.args) == 1:
            inner = self.expr(node.args[0], depth + 1)
            return inner
        if func == "len" and len(node.args) == 1 and ast.unparse(node.args[0]).endswith("sched_getaffinity(0)"):
            return self._cpus(node, "len(os.sched_getaffinity(0))")
        if func in {"os.cpu_count", "multiprocessing.cpu_count", "mp.cpu_count", "cpu_count"}:
            return Workers(None, self.at(node), f"{func}()", node_cores=True)
        if func in {"os.environ.get", "os.getenv", "environ.get", "getenv"} and node.args:
            return self._environ(node, node.args[0], node.args[1] if len(node.args) > 1 else None)
        if func in {"min", "max"} and len(node.args) == 2:
            parts = [self.expr(a, depth + 1) for a in node.args]
            if all(p.value is not None for p in parts):
                pick = min if func == "min" else max
                chosen = pick(parts, key=lambda p: p.value)  # type: ignore[arg-type, return-value]
                return replace(chosen, how=f"{func}({', '.join(p.how for p in parts)})", where=self.at(node))
        helper = None if self.in_helper else self._helper(node)
        return helper or self.unknown(node, f"`{ast.unparse(node)}`")

    def _helper(self, node: ast.Call) -> Workers | None:
        """A call to the script's own function (or a method, or one in a module beside it), followed
        one level: what its returns give on the path the job runs, or None when it is not one."""
        found = self._definitions(node.func)
        if not found:
            return None
        results = []
        for evaluator, scope, func in found:
            paths = returns(func)
            missing = {unset for _, unset in paths if unset and unset not in evaluator.env and unset != AFFINITY}
            # A variable the job does not set sends it down that variable's fallbacks, else the main path.
            taken = [value for value, unset in paths if (unset in missing if missing else unset is None)]
            outer = evaluator.scope, evaluator.in_helper
            evaluator.scope, evaluator.in_helper = scope, True
            try:
                results += [evaluator.expr(value) for value in taken]
            finally:
                evaluator.scope, evaluator.in_helper = outer
        called = f"{ast.unparse(node.func)}()"
        if not results:
            return self.unknown(node, f"{called}, which returns no value")
        one = _one_of(results, self.unknown(node, f"{called}, which returns different values"))
        if one.value is None and not one.node_cores:
            return self.unknown(node, f"{called} returns {one.how} ({one.where})")
        return replace(one, where=self.at(node), how=f"{one.how}, returned by {called} ({one.where})")

    def _definitions(self, func: ast.expr) -> list[tuple[_Evaluator, str, Function]]:
        """The definitions a call may run, each with the evaluator of its file."""
        found = []
        for index, name, scope, definition in definitions(self.index, func, self.folder):
            evaluator = self if index is self.index else _Evaluator(index, name, self.argv, self.cpus, self.env)
            found.append((evaluator, scope, definition))
        return found

    def _environ(self, node: ast.expr, key: ast.expr, default: ast.expr | None) -> Workers:
        name = key.value if isinstance(key, ast.Constant) else None
        if not (isinstance(node, ast.Call) or ast.unparse(node).startswith(("os.environ[", "environ["))):
            return self.unknown(node, f"`{ast.unparse(node)}`")
        if name in CPU_VARIABLES:
            if name in self.env:
                return Workers(self.env[name], self.at(node), name, follows_cpus=True)
            if default is not None:  # the job does not set the variable: the default runs
                return replace(self.expr(default), how=f"the default of {name} (the job does not set it)")
            return self.unknown(node, f"{name}, which this job does not set")
        return self.unknown(node, f"the environment variable {name}")

    def _cpus(self, node: ast.AST, how: str) -> Workers:
        return Workers(self.cpus, self.at(node), how, follows_cpus=True)

    def _arithmetic(self, node: ast.BinOp, depth: int) -> Workers:
        left = self.expr(node.left, depth + 1)
        number = node.right.value  # type: ignore[attr-defined]
        if left.value is None:
            return replace(left, how=f"`{ast.unparse(node)}`")
        if isinstance(node.op, ast.Sub):
            value = max(left.value - number, 0)
        elif isinstance(node.op, ast.Add):
            value = left.value + number
        else:
            value = left.value // number if number else 0
        symbol = {ast.Sub: "-", ast.Add: "+", ast.FloorDiv: "//"}[type(node.op)]
        return replace(left, value=value, how=f"{left.how} {symbol} {number}", where=self.at(node))

    def dict_workers(self, name: str, node: ast.AST, depth: int = 0) -> Workers | None:
        """num_workers held by the dict called `name`, from every way it is built or updated."""
        if depth > _MAX_DEPTH or f"dict {name}" in self.active:
            return None
        self.active.add(f"dict {name}")
        try:
            return self._dict_sources(name, node, depth)
        finally:
            self.active.discard(f"dict {name}")

    def _dict_sources(self, name: str, node: ast.AST, depth: int) -> Workers | None:
        found: list[Workers] = []
        for value, cuda in self.index.lookup(self.index.keys, self.scope, name):
            found.append(replace(self.expr(value, depth + 1), cuda_only=cuda))
        for other, cuda in self.index.lookup(self.index.merged, self.scope, name):
            inner = self.dict_workers(other, node, depth + 1)
            if inner is not None:
                found.append(replace(inner, cuda_only=inner.cuda_only or cuda))
        for value, cuda in self.index.lookup(self.index.assigned, self.scope, name):
            inner = self._dict_value(value, node, depth)
            if inner is not None:
                found.append(replace(inner, cuda_only=inner.cuda_only or cuda))
        if not found:
            return None
        return _one_of(found, self.unknown(node, f"`{name}`'s num_workers, set several ways"))

    def _dict_value(self, value: ast.expr, node: ast.AST, depth: int) -> Workers | None:
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                if isinstance(key, ast.Constant) and key.value == "num_workers":
                    return self.expr(item, depth + 1)
                if key is None and isinstance(item, ast.Name):  # {**other, ...}
                    inner = self.dict_workers(item.id, node, depth + 1)
                    if inner is not None:
                        return inner
            return None
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "dict":
            for kw in value.keywords:
                if kw.arg == "num_workers":
                    return self.expr(kw.value, depth + 1)
            return None
        if isinstance(value, ast.Name):
            return self.dict_workers(value.id, node, depth + 1)
        return None


def _one_of(found: list[Workers], ambiguous: Workers) -> Workers:
    """One answer from several assignments: CUDA-only ones win on a GPU, disagreement is unknown."""
    cuda = [w for w in found if w.cuda_only]
    plain = [w for w in found if not w.cuda_only]
    for group in (cuda, plain):
        values = {w.value for w in group}
        if len(values) > 1 or None in values and len(group) > 1:
            return ambiguous
    return cuda[0] if cuda else plain[0]


def loader_workers(index: ScriptIndex, evaluator: _Evaluator) -> Workers | None:
    """The workers of the script's DataLoaders: the largest known, or unknown, or None without one."""
    results: list[Workers] = []
    for scope, call in index.loaders:
        evaluator.scope = scope
        keyword = next((kw for kw in call.keywords if kw.arg == "num_workers"), None)
        spreads = [kw.value for kw in call.keywords if kw.arg is None]
        if keyword is not None:
            results.append(evaluator.expr(keyword.value))
            continue
        from_dicts = [evaluator.dict_workers(s.id, call) if isinstance(s, ast.Name) else
                      evaluator.unknown(call, f"`**{ast.unparse(s)}`") for s in spreads]
        known = [w for w in from_dicts if w is not None]
        if known:
            # A kwargs dict set only under CUDA leaves the DataLoader's default 0 on a CPU.
            results.append(known[0])
        elif spreads and any(not isinstance(s, ast.Name) or not _is_local_dict(index, scope, s.id) for s in spreads):
            results.append(evaluator.unknown(call, f"`**{ast.unparse(spreads[0])}`"))
        else:
            results.append(Workers(0, evaluator.at(call), "the DataLoader's default"))
    # A data module's num_workers=, unless the job's command line may set it (`data.num_workers=8`).
    if not any(w.value is not None for w in results) and not any("workers" in a for a in evaluator.argv):
        for scope, call in index.worker_calls:
            evaluator.scope = scope
            keyword = next(kw for kw in call.keywords if kw.arg == "num_workers")
            found = evaluator.expr(keyword.value)
            where = evaluator.at(keyword.value)
            if found.value is not None:
                called = f"passed to {ast.unparse(call.func)}()"
                results.append(replace(found, where=where, how=called if found.how == "literal" else
                                       f"{found.how}, {called}"))
    if not results:
        return None
    known = [w for w in results if w.value is not None]
    if known:
        return max(known, key=lambda w: w.value)  # type: ignore[arg-type, return-value]
    return next((w for w in results if w.node_cores), results[0])


def _is_local_dict(index: ScriptIndex, scope: str, name: str) -> bool:
    return any(index.lookup(table, scope, name) for table in (index.assigned, index.keys, index.merged))


def read_workers(source: str, name: str, argv: list[str] | None = None, cpus: int | None = None,
                 env: dict[str, int] | None = None, folder: Path | None = None) -> Workers | None:
    """The DataLoader workers of a script given as text (SyntaxError/ValueError propagate).

    argv: the arguments the job passes to the script; cpus: the CPUs one process of it sees
    (None when the job does not say); env: the Slurm CPU variables set for it (default:
    SLURM_CPUS_PER_TASK = cpus); folder: where the modules it imports are looked for. None means
    the script builds no DataLoader and passes no num_workers= itself.
    """
    tree = ast.parse(source, filename=name)
    index = ScriptIndex()
    index.visit(tree)
    return loader_workers(index, _Evaluator(index, name, list(argv or []), cpus, env, folder))


def read_script(path: Path, argv: list[str] | None = None, cpus: int | None = None,
                env: dict[str, int] | None = None) -> ScriptRead:
    """Read one script file; a missing, binary or broken file gives a `problem`, never an exception."""
    shown = path.name
    try:
        raw = path.read_bytes()
    except OSError as err:
        return ScriptRead(str(path), problem=f"{path}: {err.strerror or err}")
    if b"\0" in raw:
        return ScriptRead(str(path), problem=f"{path} is not a text file")
    try:
        return ScriptRead(str(path), workers=read_workers(raw.decode("utf-8"), shown, argv, cpus, env, path.parent))
    except UnicodeDecodeError:
        return ScriptRead(str(path), problem=f"{path} is not UTF-8 text")
    except SyntaxError as err:
        return ScriptRead(str(path), problem=f"{path} is not valid Python (line {err.lineno}: {err.msg})")
    except (ValueError, RecursionError) as err:
        return ScriptRead(str(path), problem=f"{path} could not be parsed ({err})")
