"""The house keeps its shape: the card's top level, no import circles, no module past 420 lines, and a
bare clone that has everything it needs (the real digits included) with nothing beside it."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: The card's top level, plus what every Python project keeps there, plus the lesson-side packages.
CARD = {"mnist_classify.py", "jobs", "profiling", "lessons", "multi_gpu", "environment.yml", "tests"}
ALSO = {"docs", "benchmarks", "README.md", "Makefile", "pyproject.toml", ".ci", ".gitignore"}
LESSON_SIDE = {"digits", "small_files"}  # at most two folders of lesson-side code
PACKAGES = ["digits", "jobs", "lessons", "multi_gpu", "profiling", "small_files"]
MAX_LINES = 420


def tracked_top_level() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {line.split("/")[0] for line in files.splitlines() if line}


def project_modules() -> dict[str, Path]:
    """Every importable module of the kit, by dotted name (benchmarks and tests import it; nothing imports them)."""
    found = {"mnist_classify": REPO / "mnist_classify.py"}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported_names(path: Path) -> Iterator[str]:
    """Every module an import statement names, at any depth (TYPE_CHECKING and function-local too)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """module -> the kit's modules it imports (a `from pkg import mod` counts as an arrow to pkg.mod)."""
    modules = project_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target in imported_names(path):
            if target in modules and target != name and target != package:
                graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as a path that comes back to its start, or [] (depth-first, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def room(module: str) -> str:
    """The top-level entry a module lives in: its package, or the script itself."""
    return module.split(".")[0]


def test_top_level_holds_the_card_and_nothing_else() -> None:
    extra = tracked_top_level() - CARD - ALSO - LESSON_SIDE
    assert extra == set(), f"not on the card's top level: {sorted(extra)} (move it into a package)"
    python_files = sorted(p.name for p in REPO.glob("*.py") if p.name in tracked_top_level())
    assert python_files == ["mnist_classify.py"]


def test_no_import_circle_between_modules_or_rooms() -> None:
    graph = import_graph()
    assert find_cycle(graph) == []
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        rooms.setdefault(room(module), set()).update(room(t) for t in targets if room(t) != room(module))
    assert find_cycle(rooms) == [], "a package reaches back up to a package that imports it"


def test_the_cycle_finder_finds_circles() -> None:
    """The checker itself can fail: a direct, an indirect and a self-free acyclic graph."""
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_function_local_and_type_checking_imports_count(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jobs.follow import Started\n"
                   "def f():\n    from profiling.runner import output_stem\n")
    assert {"jobs.follow", "profiling.runner"} <= set(imported_names(mod))


def test_no_module_is_longer_than_the_limit() -> None:
    long = {str(p.relative_to(REPO)): n for p in project_modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_a_bare_clone_finds_the_real_digits_inside_itself(tmp_path: Path) -> None:
    """Clone the committed tree where nothing stands beside it, then split the real digits from there
    with no $MNIST_T10K and an empty home (no fetched copy): only the clone's own files can answer."""
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    assert not (tmp_path / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k != "MNIST_T10K"}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(clone))
    code = ("import sys, digits.real as r; print('from', r.__file__); "
            "sys.exit(r.main(['--out', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "real")], cwd=clone,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"from {clone / 'digits' / 'real.py'}" in done.stdout  # the clone's code, not the checkout's
    assert "wrote 8000 training and 2000 test digits" in done.stdout
    assert (tmp_path / "real" / "MNIST" / "raw" / "t10k-labels-idx1-ubyte").stat().st_size == 8 + 2000
    assert not (tmp_path / "home").exists()  # nothing was fetched
