"""Before `run` starts anything: can a training loop be reached in what will be profiled?

Why: without a loop in a profiled function the whole job runs first and only then ends in "the profile is empty", a
wasted job on a cluster. This reads the source (never runs it: well under a second) and finds the loops the report
would, by `profiling.phases`' rules, in the `@profile` functions (else every function) and `--module`s.
"""
from __future__ import annotations

import ast
import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from profiling.argv import parse_script, script_nodes, shown
from profiling.phases import LoaderLoop, callee, classify_function

SPAWNERS = ("spawn", "start_processes", "Process")  # torch.multiprocessing's, and multiprocessing's Process(target=)
CPU_COUNT = re.compile(r"cpu_count\(|sched_getaffinity\(")  # the node's cores; the job's CPUs, its main process's too


def _functions(tree: ast.AST | None, decorated_only: bool) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not decorated_only or any(
                isinstance(d, ast.Name) and d.id == "profile" or isinstance(d, ast.Attribute) and d.attr == "profile"
                for d in node.decorator_list)):
            yield node


def has_profile_decorator(script: Path) -> bool:
    """True when the script marks a function with `@profile` itself (then only that is profiled)."""
    return any(_functions(parse_script(script), decorated_only=True))


def loops_in(path: Path, decorated_only: bool = False) -> list[LoaderLoop]:
    """The training loops in the file's (decorated) functions, found by the report's own rules."""
    tree = parse_script(path)
    return [loop for func in _functions(tree, decorated_only)
            for loop in classify_function(tree, str(path), func.lineno, func.name)[1]]  # the def's line finds it too


def module_level_loop(path: Path) -> int | None:
    """Line of a training loop outside any function (line_profiler cannot time module code)."""
    tree = parse_script(path)
    if tree is None:
        return None
    body = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    wrapper = ast.FunctionDef(name="__module__", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                              kw_defaults=[], defaults=[]), body=body, decorator_list=[], lineno=0)
    loops = classify_function(ast.Module(body=[wrapper], type_ignores=[]), str(path), 0, "__module__")[1]
    return loops[0].header[0] if loops else None


def module_files(name: str, roots: Sequence[Path]) -> list[Path] | None:
    """The source files of a module named by path or import name, looked up under `roots`."""
    for path in [Path(name)] + [root / (name.replace(".", "/") + suffix) for root in roots for suffix in (".py", "")]:
        if path.is_file():
            return [path]
        if path.is_dir():
            return sorted(path.rglob("*.py"))
    return None


def local_imports(script: Path, roots: Sequence[Path]) -> list[str]:
    """Modules the script imports that live beside it (the user's own code, not installed packages)."""
    names = []
    for node in script_nodes(script):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return [n for n in dict.fromkeys(names) if module_files(n, roots) and not Path(n).exists()]


def loop_in_child(path: Path, modules: Sequence[str] = ()) -> str | None:
    """Why a loop cannot be profiled: the function holding it (or calling one that does, here or in the `modules`) is
    handed to torch.multiprocessing.spawn or a multiprocessing.Process; line_profiler records only the first process."""
    roots = [path.parent, Path.cwd()]
    files = [path, *(f for name in modules for f in module_files(name, roots) or [])]
    trees = {file: parse_script(file) for file in files}  # each parsed once
    tree = trees[path]
    functions = {f.name: f for file in files[::-1] for f in _functions(trees[file], False)}  # imported too: ad_1
    looping = {loop.function for file in files for loop in loops_in(file)}  # the functions that hold a loop
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and callee(n)[0] in SPAWNERS) if tree else ():
        for target in [*call.args[:1], *(k.value for k in call.keywords if k.arg in ("fn", "target"))]:
            name = getattr(target, "id", "")
            inner = {callee(c)[0] for c in ast.walk(functions.get(name, ast.Pass())) if isinstance(c, ast.Call)}
            if looping & ({name} | inner):
                return (f"the training loop runs in processes that {path}:{call.lineno} starts ({callee(call)[0]}), "
                        f"and line_profiler records only the process it starts: for the profile, call {name}() "
                        "directly, in one process")
    return None


def loop_module(script: str, modules: Sequence[str]) -> str | None:
    """Your own module (imported by the script, beside it) that holds the training loop where neither the script's
    functions nor the `--module`s do: `run` profiles it too (torchvision's reference recipes loop in engine.py)."""
    path, roots = Path(script), [Path(script).parent, Path.cwd()]
    if loops_in(path) or any(loops_in(f) for name in modules for f in module_files(name, roots) or []):
        return None
    return next((name for name in local_imports(path, roots) if name not in modules
                 and any(loops_in(f) for f in module_files(name, roots) or [])), None)


def unreachable_loop(script: str, modules: Sequence[str], decorated_only: bool) -> str | None:
    """One line saying why no training loop will be profiled and what to pass; None when one will be, or the script
    names a DataLoader or a Trainer, whose code iterates the loader (timed through it)."""
    path, roots = Path(script), [Path(script).parent, Path.cwd()]
    child = loop_in_child(path, modules)
    if child or loops_in(path, decorated_only):
        return child
    for name in modules:
        files = module_files(name, roots)
        if files is None or any(loops_in(f) for f in files):
            return None  # found one, or a module we cannot read here: let the run decide
    if decorated_only:
        return (f"no training loop in the @profile function(s) of {script}: put @profile on the function with "
                f"the `for ... in <loader>` loop, or remove every @profile to profile the whole script")
    text, line = path.read_text(encoding="utf-8", errors="replace").lower(), module_level_loop(path)
    if ("dataloader" in text or "trainer" in text) and (line is None or any(_functions(parse_script(path), False))):
        return None  # a trainer's loop, or one at module level beside functions to profile: timed by its DataLoader
    if line is not None:
        return (f"the training loop at {script}:{line} runs at module level, where line_profiler cannot time "
                f"lines: move it into a function (def main(): ...) and call that")
    return (f"no `for ... in <loader>` training loop and no DataLoader in {script}: if they live in your own "
            f"package, pass --module NAME")


def worker_flag(script: Path, args: list[str] = (), given: str | None = None) -> str | None:
    """The script's own workers option (`-j/--workers` -> `--workers`) from its `add_argument` calls: the first, or
    the one whose dest the DataLoader is `given` (unseen j_5); in a script with subcommands run as `fit ...`,
    `fit ... --num-workers` (they go after it); else a workers option the run was given, or getopt's long one; else
    `export NUM_WORKERS=` where the script reads one such variable from the environment (unseen h_2); else None."""
    nodes = list(script_nodes(script))
    calls = [n for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    sub = args and args[0][:1] != "-" and any(c.func.attr == "add_subparsers" for c in calls)
    flags = []
    for node in (c for c in calls if c.func.attr == "add_argument"):
        options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        flag = max(options, key=lambda o: (o.startswith("--"), len(o)), default="")
        dest = next((k.value.value for k in node.keywords if k.arg == "dest"), flag.lstrip("-").replace("-", "_"))
        mine = bool(re.search(rf"\.{dest}\)*$", f"{given}"))  # `--nw` for `args.nw` (m_4), `int(opt.n)` (r_1)
        if flag.startswith("-") and (mine or any("worker" in o.lower() or o == "-j" for o in options)):
            flags.append((mine, (f"{args[0]} ... " if sub else "") + flag))
    if flags:
        return max(flags, key=lambda f: f[0])[1]  # max keeps the first of equals
    for arg in args:  # given to the run, to a CLI without argparse: Fire's `--num_workers=0`, Hydra's `x.num_workers=2`
        if re.fullmatch(r"--?[\w.-]*workers[\w.-]*(=\d+)?|[\w.]*workers\w*=\d+", arg, re.IGNORECASE):
            return arg.partition("=")[0] + "=" * ("=" in arg)  # (unseen o_6)
    for call in (n for n in nodes if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("getopt")):
        longs = [o.value for o in ast.walk(call) if re.fullmatch(r"\w*workers\w*=", f"{getattr(o, 'value', '')}")]
        if longs:  # getopt's long options, `["workers=", ...]`, where the run gave its short `-w` (unseen q_1)
            return f"--{longs[0][:-1]}"
    named = [n.value for n in nodes if isinstance(n, ast.Constant) and re.fullmatch(r"--[\w-]*workers[\w-]*",
                                                                                      f"{n.value}")]
    if named:  # a parser of its own: `match sys.argv[1:]: case ["-w" | "--workers", n, *rest]` (unseen r_2)
        return named[0]
    env = {n.value for n in nodes if isinstance(n, ast.Constant) and re.fullmatch(r"[A-Z_]*WORKERS\w*", f"{n.value}")}
    reads = any(isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv") for n in nodes)
    return f"export {env.pop()}=" if reads and len(env) == 1 else None


def flag_choices(script: Path, flag: str, root: str = ".") -> tuple[str, list[int]] | None:
    """Where the workers option's `choices` stand and the counts they allow (`choices=range(0, 9)`: unseen s_6), a list
    or a range of numbers: argparse refuses an advised count outside them, so the report says where to widen them."""
    for call in (n for n in script_nodes(script) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "add_argument" and flag.split()[-1] in [getattr(a, "value", 0) for a in n.args]):
        for given in (k.value for k in call.keywords if k.arg == "choices"):
            ranged = isinstance(given, ast.Call) and ast.unparse(given.func) == "range"
            with contextlib.suppress(ValueError, TypeError, SyntaxError):  # names, calls: not read
                allowed = range(*map(ast.literal_eval, given.args)) if ranged else ast.literal_eval(given)
                return shown(f"{script}:{given.lineno}", root), sorted(int(c) for c in allowed)
    return None


def workers_given(where: str, root: str = ".", call: str = "DataLoader") -> tuple[str | None, bool, str | None]:
    """The source of the num_workers given to the `call` at `where` (file:line) where it is not a number, or the dict
    it spreads (`**train_kwargs`); whether that is a CPU count, there or through a name assigned from it: cpu_count()
    counts the node's cores (a 3-CPU job on a 64-core node would start 64: unseen i_4), the CPU mask the job's, the
    main process's included (3 workers in a 3-CPU job: k_2); and that dict."""
    file, _, line = where.rpartition(":")
    if not line.isdigit():  # capture's "?" where it could not tell
        return None, False, None
    nodes = list(script_nodes(Path(root, file)))
    named = {t.id for n in nodes if isinstance(n, ast.Assign) and CPU_COUNT.search(ast.unparse(n.value))
             for t in n.targets if isinstance(t, ast.Name)}
    calls = [n for n in nodes if isinstance(n, ast.Call) and n.lineno == int(line)]
    given = [k.value for c in calls for k in c.keywords if k.arg == "num_workers" and type(k.value) is not ast.Constant]
    given += [c.args[5] for c in calls if ast.unparse(c.func).endswith("DataLoader") and len(c.args) > 5
              and type(c.args[5]) is not ast.Constant]  # its sixth argument: `DataLoader(ds, 64, True, None, None, n)`
    own = [k for c in calls if ast.unparse(c.func).endswith(call) for k in c.keywords]  # not the dataset's, say
    spread = next((ast.unparse(k.value) for k in own if k.arg is None  # a dict a name, an attribute or an item holds
                   and isinstance(k.value, (ast.Name, ast.Attribute, ast.Subscript))), None)
    spread = None if {"num_workers", "pin_memory", "persistent_workers"} & {k.arg for k in own} else spread
    return (ast.unparse(given[0]) if given else spread and f"{spread}.get('num_workers', 0)"), any(
        CPU_COUNT.search(ast.unparse(v)) or isinstance(v, ast.Name) and v.id in named for v in given), spread


def calls_at(where: str, root: str = ".") -> list[ast.Call]:
    """The calls on the line `where` names (file:line); none where capture could not tell ("?")."""
    file, _, line = where.rpartition(":")
    return [n for n in script_nodes(Path(root, file)) if isinstance(n, ast.Call) and f"{n.lineno}" == line] \
        if line.isdigit() else []


def sixth_argument(where: str, root: str = ".") -> str | None:
    """The edit of a count given as a number in a DataLoader's sixth place (`DataLoader(ds, 64, True, None, None, 4)`),
    with {n} for the count: a `num_workers=` beside it gives the count twice, a TypeError (unseen r_5's style)."""
    calls = [n for n in calls_at(where, root) if ast.unparse(n.func).endswith("DataLoader") and len(n.args) > 5
             and type(n.args[5]) is ast.Constant]
    return f"{where}  {ast.unparse(calls[0].func)}({', '.join(map(ast.unparse, calls[0].args[:5]))}, {{n}}, ...)" \
        if calls else None


def workers_assigned(files: Sequence[str], root: str = ".") -> tuple[str, str | None] | None:
    """A count set on the loader after it is built (`loader.num_workers = args.workers`: unseen u_6), as the edit of
    that line with {n} for the count and the source it is given where not a number: the DataLoader's own line builds
    it with none, so `persistent_workers=True` there raises (and torch refuses to set it afterwards)."""
    found = [(f"{shown(f'{file}:{n.lineno}', root)}  {ast.unparse(n.targets[0])} = {{n}}", n.value)
             for file in dict.fromkeys(Path(root, f).resolve() for f in files if f) for n in script_nodes(file)
             if isinstance(n, ast.Assign) and [getattr(t, "attr", "") for t in n.targets] == ["num_workers"]]
    return (found[0][0], None if type(found[0][1]) is ast.Constant else ast.unparse(found[0][1])) \
        if len(found) == 1 else None


def turned_off(where: str, key: str, root: str = ".") -> bool:
    """The call at `where` (file:line) sets `key` to False in so many words: a reason of its own, which an edit keeps
    (`persistent_workers=False`: a dataset told its epoch, persistent workers keep epoch 0: unseen l_2)."""
    return any(k.arg == key and isinstance(k.value, ast.Constant) and k.value.value is False
               for n in calls_at(where, root) for k in n.keywords)


def epoch_told(where: str, root: str = ".") -> str | None:
    """file:line where the loader's file tells a dataset its epoch in the main process (`train_set.set_epoch(epoch)`,
    `loader.dataset.epoch = epoch`; a sampler's is not the dataset's): persistent workers, forked once, keep their first
    copy, so that epoch would never reach them (unseen p_1, p_5: the losses moved)."""
    file, _, line = where.rpartition(":")
    for node in script_nodes(Path(root, file)) if line.isdigit() else ():
        told = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "set_epoch" else next((t.value for t in getattr(node, "targets", ())
                                                          if isinstance(t, ast.Attribute) and "epoch" in t.attr), None)
        if told is not None and re.search(r"dataset|_set$|\bds$|data$", receiver := ast.unparse(told), re.IGNORECASE) \
                and "sampler" not in receiver.lower():
            return f"{file}:{node.lineno}"
    return None


def workers_set_at(script: Path, given: str | None, args: Sequence[str] = (), root: str = ".") -> str | None:
    """Where the `cfg.num_workers` or `cfg["num_workers"]` a DataLoader is `given` is set to a number: the one call that
    passes it (`TrainingArguments(..., dataloader_num_workers=0)` overrides the dataclass's default: unseen o_4), else
    the one line in the script (a dataclass's default), else in a config file the run was given or the script names, as
    an edit with {n} for the count (unseen j_2, j_3): an edit on the DataLoader's line would leave that setting saying
    otherwise."""
    name = re.fullmatch(r"(?:.*?[.\['\"])?(\w*workers\w*)['\"\]]*", given or "", re.IGNORECASE)  # or a bare name
    text, nodes = script.read_text(errors="replace"), list(script_nodes(script))
    passed = [(ast.unparse(n.func), k.value.lineno) for n in nodes
              if isinstance(n, ast.Call) and not ast.unparse(n.func).endswith("DataLoader")
              for k in n.keywords if k.arg == name[1] and type(getattr(k.value, "value", None)) is int] if name else []
    if passed:  # more than one call (a train and an eval config): no one place to edit
        return f"{shown(f'{script}:{passed[0][1]}', root)}  {passed[0][0]}(..., {name[1]}={{n}})" \
            if len(passed) == 1 else None
    functions = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    defaults = [(f.name, d.lineno) for f in functions for a, d in [*zip(f.args.args[::-1], f.args.defaults[::-1]),
                                                                   *zip(f.args.kwonlyargs, f.args.kw_defaults)]
                if a.arg == given and type(getattr(d, "value", None)) is int]
    if len(defaults) == 1:  # a parameter's default, `def train(..., num_workers: int = 0)`, no call passing it (s_4)
        return f"{shown(f'{script}:{defaults[0][1]}', root)}  def {defaults[0][0]}(..., {given}={{n}}, ...)"
    given_files = [Path(root, a.partition("=")[2] or a) for a in args]  # `--config x.yaml` and `--config=x.yaml`
    beside = (f for f in script.parent.glob("*") if f.name in text)  # listed only when reached: most runs never
    keyed = {v.lineno for n in nodes if isinstance(n, ast.Dict) for k, v in zip(n.keys, n.values)  # a key in a dict's
             if name and getattr(k, "value", None) == name[1] and type(getattr(v, "value", None)) is int}  # line: u_5
    for files in ([script], given_files, beside) if name else ():  # the script's own line, a file given, one it names
        found = [(f, i, line) for f in files if (f == script or f.suffix in (".json", ".yaml", ".yml", ".toml"))
                 and os.access(f, os.R_OK) and os.path.isfile(f)
                 for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
                 if re.match(rf"\s*['\"]?{name[1]}['\"]?\s*(:\s*int\s*)?[:=]\s*\d+\s*,?\s*(#.*)?$", line)
                 or (i in keyed if f == script else re.search(rf"['\"]{name[1]}['\"]\s*:\s*\d+\s*[,}}]", line))]
        for file, i, line in found if len(found) == 1 else ():
            return f"{shown(f'{file}:{i}', root)}  " + re.sub(rf"({name[1]}['\"]?\s*(:\s*int\s*)?[:=]\s*)\d+",
                                                              r"\g<1>{n}", line.strip(), 1)
    return None


def workers_from_slurm(files: Sequence[str], root: str = ".") -> str | None:
    """file:line where a worker count is read from SLURM_CPUS_PER_TASK (`NUM_WORKERS = int(os.environ.get(
    "SLURM_CPUS_PER_TASK", 4)) - 1`): the job's #SBATCH line sets it, and an edit of the count on a DataLoader's line
    would part the two (unseen q_2: the count edited in its library while the script read Slurm's)."""
    for file in dict.fromkeys(f for f in files if f):
        for node in script_nodes(Path(root, file)):
            targets = [ast.unparse(t).lower() for t in getattr(node, "targets", [getattr(node, "target", None)]) if t]
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and any("workers" in t for t in targets) \
                    and "SLURM_CPUS_PER_TASK" in ast.unparse(node.value or ast.Constant(None)):
                return shown(f"{Path(root, file)}:{node.lineno}", root)
    return None


def takes_metrics_json(script: Path) -> bool:
    """The kit's own scripts declare `--metrics-json`; any other (its imitations of others' styles too) is not."""
    try:
        return "--metrics-json" in script.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
