"""The script's own helper functions, for the worker reader: what a helper returns, and on which path.

`def loader_workers(): return int(os.environ["SLURM_CPUS_PER_TASK"]) - 1` is the commonest way a
training script sizes its DataLoader, so jobs/workers_reader.py follows a call one level into
such a function, in the same file or a module beside the script. A helper often has a fallback
for when the Slurm variable is unset (`except KeyError: return os.cpu_count()`, or
`if "SLURM_CPUS_PER_TASK" in os.environ: ...`); each `return` is marked with the variable whose
absence it stands in for, so the reader can take the path the job really runs.
"""
from __future__ import annotations

import ast
from pathlib import Path

from jobs.workers_index import ScriptIndex

Function = ast.FunctionDef | ast.AsyncFunctionDef
CPU_VARIABLES = frozenset({"SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"})
# Not a variable, but guarded the same way (`hasattr(os, "sched_getaffinity")`, `except AttributeError`):
# it is there on every Linux node, so its fallbacks never run in a job.
AFFINITY = "sched_getaffinity"
_SEARCH_UP = 2  # a module is looked for beside the script and up to this many folders above it


def _variable(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The CPU variable an expression reads, directly or through a local name assigned from it."""
    text = ast.unparse(node)
    for name in (*sorted(CPU_VARIABLES), AFFINITY):
        if name in text:
            return name
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in aliases:
            return aliases[sub.id]
    return None


def _set_branch_is_body(test: ast.expr) -> bool | None:
    """True when the `if` body runs with the variable set, False when it runs with it unset, None
    when the test is not about whether it is set (`if cpus > 8:` tests its value: both paths may run)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _set_branch_is_body(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(left, ast.Constant) and isinstance(left.value, str):
            return isinstance(op, ast.In)  # "SLURM_CPUS_PER_TASK" in os.environ
        is_empty = isinstance(right, ast.Constant) and right.value in (None, "")
        if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) and is_empty:
            return isinstance(op, (ast.IsNot, ast.NotEq))
        return None
    if isinstance(test, ast.Name):
        return True  # a name holding os.environ.get(...): set and not empty
    if isinstance(test, ast.Call) and ast.unparse(test.func).endswith(("environ.get", "getenv", "hasattr")):
        return True
    return None


def returns(func: Function) -> list[tuple[ast.expr, str | None]]:
    """Every `return value` of a function, each with the CPU variable whose absence leads to it (or None)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found = _variable(node.value, {})
            if found:
                aliases[node.targets[0].id] = found
    out: list[tuple[ast.expr, str | None]] = []
    _walk(func.body, None, aliases, out)
    return out


def _walk(body: list[ast.stmt], unset: str | None, aliases: dict[str, str],
          out: list[tuple[ast.expr, str | None]]) -> bool:
    """Collect the returns of `body`; True when it always returns. `unset`: the variable whose
    absence this code runs under."""
    for stmt in body:
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                out.append((stmt.value, unset))
            return True
        if isinstance(stmt, ast.If):
            name = _variable(stmt.test, aliases)
            body_set = _set_branch_is_body(stmt.test) if name else None
            if body_set is None:
                ends = _walk(stmt.body, unset, aliases, out) & _walk(stmt.orelse, unset, aliases, out)
            else:
                body_ends = _walk(stmt.body, unset or (None if body_set else name), aliases, out)
                else_ends = _walk(stmt.orelse, unset or (name if body_set else None), aliases, out)
                if body_set and body_ends and not stmt.orelse:
                    unset = unset or name  # what follows runs only when the variable is unset
                ends = body_ends and else_ends
            if ends:
                return True
        elif isinstance(stmt, ast.Try):
            read = next((n for s in stmt.body if (n := _variable(s, aliases))), None)
            ends = _walk(stmt.body, unset, aliases, out)
            for handler in stmt.handlers:
                _walk(handler.body, unset or read, aliases, out)
            _walk(stmt.orelse + stmt.finalbody, unset, aliases, out)
            if ends and not stmt.handlers:
                return True
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            if _walk(stmt.body, unset, aliases, out):
                return True
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            _walk(stmt.body + stmt.orelse, unset, aliases, out)
    return False


def local_module(module: str, folder: Path) -> Path | None:
    """The file of an imported module that sits beside the script (or a folder or two above it)."""
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    bases = [folder.parents[level - 2] if level > 1 and len(folder.parents) >= level - 1 else folder] if level \
        else [folder, *list(folder.parents)[:_SEARCH_UP]]
    for base in bases:
        path = base.joinpath(*parts)
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if parts and candidate.is_file():
                return candidate
    return None


def definitions(index: ScriptIndex, func: ast.expr, folder: Path | None
                ) -> list[tuple[ScriptIndex, str, str, Function]]:
    """(index, file name, scope, def) of each function a call may run: one of this file's functions
    or methods (`f()`, `self.f()`), or a function of a module beside the script (`helpers.f()`,
    `from helpers import f`). Calls on other objects are not followed."""
    if isinstance(func, ast.Name) and func.id in index.functions:
        return [(index, "", scope, f) for scope, f in index.functions[func.id]]
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in {"self", "cls"}:
        return [(index, "", scope, f) for scope, f in index.functions.get(func.attr, [])]
    if isinstance(func, ast.Name) and func.id in index.imports:
        module, name = index.imports[func.id]
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in index.imports:
        base, sub = index.imports[func.value.id]
        module, name = (base if sub is None else base + ("" if base.endswith(".") else ".") + sub), func.attr
    else:
        return []
    path = local_module(module, folder) if folder is not None and name is not None else None
    if path is None:
        return []
    try:
        other = ScriptIndex()
        other.visit(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return []
    return [(other, path.name, scope, f) for scope, f in other.functions.get(name or "", []) if scope == f".{name}"]
