"""One pass over a script's AST: what the worker reader (jobs/workers_reader.py) looks things up in.

It records, per function scope, every assignment to a name, every way a dict gets a
`num_workers` key (a literal, `d["num_workers"] = v`, `d.update(...)`), the argparse flags by
their `dest`, the names bound to `parse_args()`, the DataLoader calls, each marked when it
sits under an `if` that tests CUDA, the other calls given a `num_workers=` keyword (a trainer
library's data module), the script's functions and methods by name, and what it imports. Nothing
is evaluated here.
"""
from __future__ import annotations

import ast


# Calls whose num_workers= is a dict's key or a parser's default, not a loader's workers.
_NOT_LOADERS = frozenset({"dict", "update", "setdefault", "set_defaults", "Namespace", "add_argument"})


def mentions_cuda(node: ast.AST) -> bool:
    """A test about the GPU: `use_cuda`, `torch.cuda.is_available()`, `use_accel` (today's
    pytorch/examples), `args.gpu`."""
    text = ast.unparse(node).lower()
    return any(word in text for word in ("cuda", "accel", "gpu"))


class ScriptIndex(ast.NodeVisitor):
    """One pass over the module: assignments, dict updates, argparse flags and DataLoader calls."""

    def __init__(self) -> None:
        # Names are kept per function ("" is the module), so `workers` in one function is not
        # confused with `workers` in another: (scope, name) -> [(value, under cuda)].
        self.assigned: dict[tuple[str, str], list[tuple[ast.expr, bool]]] = {}
        self.keys: dict[tuple[str, str], list[tuple[ast.expr, bool]]] = {}   # a dict's num_workers values
        self.merged: dict[tuple[str, str], list[tuple[str, bool]]] = {}      # dicts merged into a dict
        self.flags: dict[str, ast.Call] = {}                                  # argparse dest -> add_argument
        self.parsed: set[str] = set()                                         # names holding parse_args()
        self.loaders: list[tuple[str, ast.Call]] = []
        self.worker_calls: list[tuple[str, ast.Call]] = []                    # Other(num_workers=...) calls
        self.functions: dict[str, list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]] = {}  # name -> defs
        self.imports: dict[str, tuple[str, str | None]] = {}  # local name -> (module, name in it or None)
        self._cuda = 0
        self._scope = ""

    def lookup(self, table: dict, scope: str, name: str) -> list:
        """A name's entries in its function, else in the enclosing ones, else at module level."""
        while True:
            if (scope, name) in table:
                return table[(scope, name)]
            if not scope:
                return []
            scope = scope.rsplit(".", 1)[0]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.setdefault(node.name, []).append((f"{self._scope}.{node.name}", node))
        outer, self._scope = self._scope, f"{self._scope}.{node.name}"
        self.generic_visit(node)
        self._scope = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname or "." not in alias.name:
                self.imports[alias.asname or alias.name] = (alias.name, None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            self.imports[alias.asname or alias.name] = (module, alias.name)

    def visit_If(self, node: ast.If) -> None:
        cuda = mentions_cuda(node.test)
        self._cuda += cuda
        for child in node.body:
            self.visit(child)
        self._cuda -= cuda
        for child in node.orelse:  # the else branch is the no-CUDA case: not CUDA-only
            self.visit(child)

    def visit_Assign(self, node: ast.Assign) -> None:
        parses = isinstance(node.value, ast.Call) and ast.unparse(node.value.func).endswith(
            ("parse_args", "parse_known_args"))
        for target in node.targets:
            if parses:
                first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
                if isinstance(first, ast.Name):
                    self.parsed.add(first.id)
            if isinstance(target, ast.Name):
                self.assigned.setdefault((self._scope, target.id), []).append((node.value, self._cuda > 0))
            elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                  and isinstance(target.slice, ast.Constant) and target.slice.value == "num_workers"):
                self.keys.setdefault((self._scope, target.value.id), []).append((node.value, self._cuda > 0))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and node.value is not None:
            self.assigned.setdefault((self._scope, node.target.id), []).append((node.value, self._cuda > 0))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.endswith("DataLoader"):
            self.loaders.append((self._scope, node))
        elif name not in _NOT_LOADERS and any(kw.arg == "num_workers" for kw in node.keywords):
            self.worker_calls.append((self._scope, node))
        elif name == "add_argument":
            self._flag(node)
        elif name == "update" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            target = func.value.id
            for arg in node.args:
                self._merge(target, arg)
            for kw in node.keywords:
                if kw.arg == "num_workers":
                    self.keys.setdefault((self._scope, target), []).append((kw.value, self._cuda > 0))
        self.generic_visit(node)

    def _merge(self, target: str, value: ast.expr) -> None:
        if isinstance(value, ast.Name):
            self.merged.setdefault((self._scope, target), []).append((value.id, self._cuda > 0))
        elif isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                if isinstance(key, ast.Constant) and key.value == "num_workers":
                    self.keys.setdefault((self._scope, target), []).append((item, self._cuda > 0))

    def _flag(self, node: ast.Call) -> None:
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = next((kw.value.value for kw in node.keywords if kw.arg == "dest"
                     and isinstance(kw.value, ast.Constant)), None)
        if dest is None:
            longs = [n for n in names if n.startswith("--")]
            dest = (longs[0] if longs else names[0] if names else "").lstrip("-").replace("-", "_")
        if dest:
            self.flags[dest] = node
