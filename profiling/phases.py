"""Stage 3: say which phase of a training step each profiled line belongs to, and find the loop.

Lines are classified from the parsed source (`ast`), not regular expressions: a statement over several lines gets one
phase, `for` headers are told apart from their bodies' calls, and a comment that mentions `backward` changes nothing.
Names still matter (`model(...)` is the forward pass); their patterns are below, in one place, to extend.

The data-wait line is the header of the loop that pulls batches: a `for` whose iterable names a loader (`train_loader`,
`enumerate(loader)`, `tqdm(dataloader)`), else the innermost `for` whose body calls `.backward()` or `optimizer.step()`.
"""
from __future__ import annotations

import ast
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from profiling.records import PHASES, LineProfile, LoopSummary

if TYPE_CHECKING:  # annotations only: `run` classifies the script before it starts, and must start it fast
    import pandas as pd

    from profiling.table import Sources

LOADER_NAMES = re.compile(r"loader|batches|data_?iter|prefetch|(^|_)dls?(_|$)", re.IGNORECASE)  # train_dl: unseen q_5
MODEL_NAMES = re.compile(r"^(self|model|net|network|module|enc(oder)?|dec(oder)?|backbone|classifier)$"  # self(x): a
                         r"|_model$|^model_|_net$|^net\w$", re.IGNORECASE)  # Keras-like fit() (v_6); netG: DCGAN
LOSS_NAMES = re.compile(r"loss|criterion|^crit$|cross_?entropy|nll|mse|bce|kl_div|hinge", re.IGNORECASE)
OUTPUT_TARGETS = {"output", "outputs", "out", "logits", "pred", "preds", "prediction", "y_hat", "yhat"}
SYNC_ATTRS = {"item", "tolist", "numpy", "cpu", "synchronize"}
LOG_ATTRS = {"info", "debug", "warning", "log", "write", "add_scalar", "add_scalars", "set_postfix"}
LOG_RECEIVERS = re.compile(r"log|writer|wandb|mlflow|tensorboard|pbar|tqdm|sys\.std", re.IGNORECASE)
OPTIMIZER_RECEIVERS = re.compile(r"optim|opt$|scaler|sched", re.IGNORECASE)

# When one line holds several kinds of call, the first phase in this order wins ("other": none of them).
PRIORITY = ("backward", "optimizer", "forward", "loss", "host_to_device", "logging_sync", "data_wait", "other")


@dataclass(frozen=True)
class LoaderLoop:
    """A loop that pulls batches (`for ... in <loader>`, or `next(it)` inside a loop) in a profiled function."""

    file: str
    function: str
    header: tuple[int, ...]     # the data-wait lines: the `for` header, or a `next(...)` statement
    body_start: int
    body_end: int
    steps: bool                 # the body calls backward() or optimizer.step(): a training loop
    function_start: int | None  # first body line of the enclosing function (counts calls)
    batch_line: int             # a line run once a batch: the first simple statement, inside any `try:` or `with`
    shared: str | None = None   # the phase of a body on the header's own line (`for b in dl: step(b)`: unseen ad_4)


def callee(call: ast.Call) -> tuple[str, str]:
    """(name, receiver) of a call: `F.nll_loss(x)` -> ("nll_loss", "F"); `model(x)` -> ("model", "")."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id, ""
    if isinstance(func, ast.Attribute):
        return func.attr, ast.unparse(func.value)
    if isinstance(func, ast.Call):  # nn.CrossEntropyLoss()(out, y)
        return callee(func)
    return "", ""


def _call_phase(call: ast.Call) -> str | None:
    name, receiver = callee(call)
    if name == "backward" or name == "grad" and receiver.endswith("autograd"):  # MAML's inner loop (unseen ab_4)
        return "backward"
    if name == "zero_grad" or "clip_grad" in name or name in {"step", "update"} and OPTIMIZER_RECEIVERS.search(
            receiver) or name == "step" and receiver not in ("", "self") and not call.args and not call.keywords:
        return "optimizer"  # a bare `x.step()` too: one of several optimizers, `for m, o in pairs` (unseen z_2)
    if name == "print" or name in SYNC_ATTRS or (name in LOG_ATTRS and LOG_RECEIVERS.search(receiver)):
        return "logging_sync"
    if name in {"to", "cuda"} and receiver:
        return "host_to_device"
    if name == "next" and any(LOADER_NAMES.search(n) or "iter" in n.lower() for n in _names(call)):
        return "data_wait"
    if LOSS_NAMES.search(name):
        return "loss"
    if MODEL_NAMES.search(name) or name in ("forward", "functional_call"):  # torch.func's forward (ab_4)
        return "forward"
    return None


def _names(node: ast.AST) -> list[str]:
    """Every identifier mentioned in an expression (`enumerate(self.train_loader)` -> enumerate, self, train_loader)."""
    return [sub.id if isinstance(sub, ast.Name) else sub.attr for sub in ast.walk(node)
            if isinstance(sub, (ast.Name, ast.Attribute))]


def statement_phase(node: ast.AST) -> str:
    """The phase of one simple statement (or of a compound statement's header expression)."""
    phases = {p for call in ast.walk(node) if isinstance(call, ast.Call) if (p := _call_phase(call))}
    if not phases and isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
        if targets & OUTPUT_TARGETS:  # output = some_callable(x): the forward pass under another name
            phases.add("forward")
        elif any(LOSS_NAMES.search(t) for t in targets):  # loss = ctc(...), an nn.CTCLoss() by another name (ac_1)
            phases.add("loss")
    return next((p for p in PRIORITY if p in phases), "other")


def _is_steps(node: ast.AST) -> bool:
    return any(isinstance(c, ast.Call) and _call_phase(c) in {"backward", "optimizer"} for c in ast.walk(node))


def _is_range(expr: ast.expr) -> bool:
    """`range(n)`, `enumerate(range(n))`, `zip(range(a), range(b))`: counting, not loading."""
    if not isinstance(expr, ast.Call):
        return False
    name = callee(expr)[0]
    return name == "range" or (name in {"enumerate", "zip"} and bool(expr.args)
                               and all(_is_range(a) for a in expr.args))


def _is_loader_loop(loop: ast.For | ast.AsyncFor, inside_loader: bool) -> bool:
    """A loop over a named loader; else the innermost stepping loop not already inside a loader loop."""
    walks = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name) and LOADER_NAMES.search(n.id)}
    if _is_range(loop.iter) or any(isinstance(n, (ast.For, ast.AsyncFor)) and walks & set(_names(n.iter))
                                   for n in ast.walk(loop) if n is not loop):  # `for name, loader in loaders.items()`
        return False
    if any(LOADER_NAMES.search(n) for n in _names(loop.iter)):
        return True
    pulled = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} | {"enumerate", "zip"}
    inner_loops_step = any(isinstance(n, (ast.For, ast.AsyncFor)) and n is not loop and _is_steps(n)  # not one over a
                           and not set(_names(n.iter)) <= pulled for n in ast.walk(loop))  # group it pulled (n_1)
    return not inside_loader and _is_steps(loop) and not inner_loops_step


def _lines(node: ast.stmt) -> range:
    return range(node.lineno, (node.end_lineno or node.lineno) + 1)


def _iter_targets(node: ast.AST) -> list[str]:
    """The names an `it = iter(...)` statement binds (none for any other node)."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and callee(node.value) == ("iter", ""):
        return [ast.unparse(target) for target in node.targets]
    return []


def _pulls(node: ast.AST, iterators: set[str]) -> bool:
    """Does the statement call `next` on one of the function's iterators, or start one (starting the workers)?"""
    if started := _iter_targets(node):
        return any(name in iterators for name in started)
    return any(isinstance(call, ast.Call) and callee(call) == ("next", "") and call.args
               and ast.unparse(call.args[0]) in iterators for call in ast.walk(node))


def _phase(node: ast.AST, iterators: set[str]) -> str:
    phase = statement_phase(node)
    return "data_wait" if phase == "other" and _pulls(node, iterators) else phase


def _next_lines(body: list[ast.stmt], iterators: set[str]) -> tuple[int, ...]:
    """Lines of the `x = next(it)` statements of a loop's body, the wait of a hand-driven loop: also inside `try:` (a
    step-based loop that starts a new iterator on StopIteration) and `with` blocks."""
    lines: list[int] = []
    for stmt in body:
        if isinstance(stmt, ast.Try):
            lines += _next_lines(stmt.body + [s for h in stmt.handlers for s in h.body] + stmt.orelse, iterators)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            lines += _next_lines(stmt.body, iterators)
        elif not hasattr(stmt, "body") and _phase(stmt, iterators) == "data_wait":
            lines += _lines(stmt)
    return tuple(lines)


def _find_function(tree: ast.AST, first_line: int, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def that kernprof keyed as (first_line, name); first_line is the first decorator's line."""
    short = name.rsplit(".", 1)[-1]
    same_name = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == short:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if first_line in (start, node.lineno):
                return node
            same_name.append(node)
    return same_name[0] if len(same_name) == 1 else None


def classify_function(source: str | ast.AST, file: str, first_line: int, name: str,
                      hooked: Collection[int] = ()) -> tuple[dict[int, str], list[LoaderLoop]]:
    """Phase of every line of one function, and its loader loops: by their names and steps, or `hooked`, the line
    the DataLoader hook saw the training loader iterated at (`for batch in data:` around a closure: unseen n_2).
    `source` is the module's text or its parsed tree (parsed once per file, for `kernprof -p`'s many functions)."""
    tree = ast.parse(source) if isinstance(source, str) else source
    func = _find_function(tree, first_line, name)
    if func is None:
        return {}, []
    phase_of: dict[int, str] = {}
    loops: list[LoaderLoop] = []
    inside_loader: set[int] = set()  # ids of nodes nested in a loader loop (micro-batches are not data)
    headers: set[int] = set()  # a loader loop's header lines: a body on the same line does not relabel them
    # names bound to `iter(...)` (`it = iter(loader)`): what `next` pulls from them is a batch, whatever the name
    iterators = {name for node in ast.walk(func) for name in _iter_targets(node)}
    for node in ast.walk(func):  # breadth first: outer loops are seen before inner ones
        if node is func or not isinstance(node, ast.stmt):
            continue
        nested = id(node) in inside_loader
        if isinstance(node, (ast.For, ast.AsyncFor)):
            header = tuple(range(node.lineno, max(node.body[0].lineno, node.lineno + 1)))
            is_loader = (node.lineno in hooked or _is_loader_loop(node, nested)) and (_is_steps(node) or not any(
                isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node)))  # a wrapper's `yield batch`: r_1
            phase_of.update(dict.fromkeys(header, "data_wait" if is_loader else statement_phase(node.iter)))
            waits = header if is_loader else _next_lines(node.body, iterators)
            headers.update(header if is_loader else ())
        else:
            waits = _next_lines(node.body, iterators) if isinstance(node, ast.While) else ()
            if isinstance(node, (ast.If, ast.While)):
                phase_of.setdefault(node.lineno, statement_phase(node.test))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                phase_of.setdefault(node.lineno, "other")
            elif not hasattr(node, "body"):  # a simple statement: all its lines share its phase
                phase = _phase(node, iterators)
                for line in set(_lines(node)) - headers:  # `a(); b()` on one line: the stronger phase wins
                    phase_of[line] = min(phase, phase_of.get(line, phase), key=PRIORITY.index)
        if waits and not nested:
            inside_loader.update(id(n) for n in ast.walk(node) if n is not node)
            pulls = isinstance(node.body[0], ast.Try) and node.body[0].body[0].lineno in waits and len(node.body) > 1
            first = node.body[pulls]  # `try: next(it)` runs once more than the batches (q_3); a `with` line twice (o_1)
            while isinstance(first, (ast.Try, ast.With, ast.AsyncWith)):
                first = first.body[0]
            on_header = [_phase(s, iterators) for s in node.body if isinstance(node, (ast.For, ast.AsyncFor))
                         and s.lineno in headers and not hasattr(s, "body")]  # `for b in dl: step(b)`
            loops.append(LoaderLoop(file, name, waits, node.body[0].lineno, node.end_lineno or node.lineno,
                                    _is_steps(node), func.body[0].lineno if func.body[0] is not node else None,
                                    first.lineno, min(on_header, key=PRIORITY.index) if on_header else None))
    if name.rpartition(".")[2] == "forward":  # a module's own forward: its layers are the forward pass (unseen aa_4)
        phase_of = {line: "forward" if phase == "other" else phase for line, phase in phase_of.items()}
    return phase_of, loops


def hooked_lines(hooked: str, file: str) -> set[int]:
    """The line of `hooked` (the hook's file:line of the training loop) where it is in `file`, by the file's name."""
    at, _, line = hooked.rpartition(":")
    return {int(line)} if line.isdigit() and os.path.basename(at) == os.path.basename(file) else set()


def classify_lines(table: pd.DataFrame, profile: LineProfile, sources: Sources,
                   hooked: str = "") -> tuple[pd.DataFrame, list[LoaderLoop], list[str]]:
    """The table with its `phase` column filled, the loader loops and notes; `hooked`: the hooked loop's file:line."""
    phase_of: dict[tuple[str, str, int], str] = {}
    loops: list[LoaderLoop] = []
    notes: list[str] = []
    trees: dict[str, ast.AST | None] = {}
    for file, first_line, name in profile.timings:
        if file not in trees and sources.get(file) is not None:  # each file parsed once
            try:
                trees[file] = ast.parse("\n".join(sources[file]))
            except (SyntaxError, ValueError) as err:
                trees[file] = None
                notes.append(f"{file}: could not parse the source ({type(err).__name__}); "
                             "its lines are shown as 'other'")
        if trees.get(file) is None:  # no source, or none that parses
            continue
        phases, found = classify_function(trees[file], file, first_line, name, hooked_lines(hooked, file))
        if not phases:
            notes.append(f"{file}: found no definition of {name} at line {first_line}; "
                         "the source may have changed since the profile was taken")
        phase_of.update({(file, name, line): phase for line, phase in phases.items()})
        loops.extend(found)
    keys = zip(table["file"], table["function"], table["line"])
    return table.assign(phase=[phase_of.get(key, "other") for key in keys]), loops, notes


def split_shared_lines(table: pd.DataFrame, loops: list[LoaderLoop], hooked: str,
                       traced: dict | None) -> tuple[pd.DataFrame, list[str]]:
    """A loop on one line (`for b in dl: step(b)`) times its wait and its step as one line: the hook's traced wait is
    the wait, and the rest a second row of the same line, in the body's phase (unseen ad_4 read 100 % data wait)."""
    import pandas as pd

    notes = []
    for loop in [loop for loop in loops if loop.shared]:
        at = (table["file"] == loop.file) & (table["function"] == loop.function) & (table["line"] == loop.header[0])
        if not at.any():
            continue
        where = f"{os.path.basename(loop.file)}:{loop.header[0]}"
        wait = (traced or {}).get("wait_seconds")
        if wait is None or not hooked_lines(hooked, loop.file) & set(loop.header):
            notes.append(f"the loop's body shares line {where} with its `for`: line timings cannot part the wait for "
                         "a batch from the step, so the data wait shown holds the step too")
            continue
        line_s = float(table.loc[at, "seconds"].iloc[0])
        share = min(float(wait), line_s) / line_s if line_s > 0 else 0.0
        timed = ["seconds", "ms_per_hit", "pct_of_function"]
        body = table[at].assign(phase=loop.shared, **{c: table.loc[at, c] * (1 - share) for c in timed})
        table.loc[at, timed] = table.loc[at, timed] * share
        table = pd.concat([table, body], ignore_index=True)
        notes.append(f"the loop's body shares line {where} with its `for`: the wait there is the DataLoader hook's "
                     f"({share * line_s:.3f} s of the line's {line_s:.3f} s), the rest is the step's")
    return table, notes


def _hits(rows: pd.DataFrame, line: int | None) -> int:
    match = rows.loc[rows["line"] == line, "hits"]  # (no line, None, matches none)
    return int(match.iloc[0]) if len(match) else 0


def summarise_loop(table: pd.DataFrame, loop: LoaderLoop) -> LoopSummary:
    """Wait, compute and batch count of one loader loop, from the classified table."""
    rows = table[(table["file"] == loop.file) & (table["function"] == loop.function)]
    in_header = rows["line"].isin(loop.header)
    header = rows[in_header & (rows.get("phase", "data_wait") == "data_wait")]  # a body on its line is the step's
    body = rows[rows["line"].between(loop.body_start, loop.body_end) & ~rows.index.isin(header.index)]
    header_hits = int(rows[in_header]["hits"].max()) if in_header.any() else 0
    # The first body line runs once a batch in any line_profiler; the header (+1 a loop, not in 4.0.0) backs it up.
    batches = _hits(rows, loop.batch_line) or max(header_hits - 1, 0) or header_hits
    entries = _hits(rows, loop.function_start) or None
    return LoopSummary(file=loop.file, function=loop.function, header_line=loop.header[0], batches=batches,
                       wait_seconds=float(header["seconds"].sum()), compute_seconds=float(body["seconds"].sum()),
                       entries=entries, lines=(min(loop.header[0], loop.body_start), loop.body_end))


def training_loop(table: pd.DataFrame, loops: list[LoaderLoop], hooked: str = "") -> LoopSummary | None:
    """The loop to advise on: a training loop (one that steps) before any other, the one the hook timed and tried counts
    in before another (a distilling teacher's warm-up cost as much: unseen x_2), then the costliest."""
    summaries = [(loop.steps, bool(hooked_lines(hooked, loop.file) & set(loop.header)), s.wait_seconds
                  + s.compute_seconds, s) for loop in loops if (s := summarise_loop(table, loop)).batches > 0]
    return max(summaries, key=lambda item: item[:3])[3] if summaries else None


def hooked_loop(loaders: list[dict], trials: dict | None) -> LoopSummary | None:
    """The training loop as the DataLoader hook timed it, for a loop no profiled line shows (a framework's trainer, a
    loop at module level: `function` ""): where its loader was iterated, the traced part's wait and compute."""
    traced = (trials or {}).get("traced") or {}
    if not loaders or traced.get("steps", 0) < 1:
        return None
    chosen = (trials or {}).get("loader") or loaders[0]  # the trials' training loader (older records: the first)
    where, _, line = str(chosen.get("iterated_at", "")).rpartition(":")
    if not line.isdigit():
        return None
    wait = float(traced.get("wait_seconds", 0.0))
    return LoopSummary(file=where, function="", header_line=int(line), batches=int(traced["steps"]),
                       wait_seconds=wait, compute_seconds=float(traced.get("seconds", 0.0)) - wait)


def set_up_as_other(table: pd.DataFrame, loop: LoopSummary | None) -> pd.DataFrame:
    """Lines outside the training loop that ran no more often than its function was entered (set-up, per-epoch work)
    are no phase of a step: in the line table `model = Net().to(device)` read as `forward` (unseen scripts)."""
    if loop is None or not loop.function or loop.batches <= (entries := loop.entries or 1):
        return table
    return table.assign(phase=table["phase"].where(_in_loop(table, loop) | (table["hits"] > entries), "other"))


def _call_of(names: str) -> str:
    """A call of one of these names (a regex alternation), not its `def` line: `self.train_step(` too."""
    return rf"(?<!def )\b(?:{names})\s*\("


def _callers(table: pd.DataFrame) -> pd.DataFrame:
    """Without a loop, the lines of the profiled functions no other one calls: a callee's time is in its caller's line
    already (unseen ab_1 counted its model twice, at `output = model(data)` and in `forward`'s own lines)."""
    def called(function: str) -> bool:
        others, name = table[table["function"] != function], function.rpartition(".")[2]
        by_name = others["source"].str.contains(_call_of(re.escape(name))).any()
        return bool(by_name or name in ("forward", "__call__") and (others["phase"] == "forward").any())
    rows = table[~table["function"].isin([f for f in set(table["function"]) if called(f)])]
    return rows if len(rows) else table  # (each calls another: no caller to start from)


def _in_loop(table: pd.DataFrame, loop: LoopSummary) -> pd.Series:
    """The rows of the loop's own lines (all its function's where an older record gave no lines)."""
    return (table["file"] == loop.file) & (table["function"] == loop.function) & (
        table["line"].between(*loop.lines) | (loop.lines[1] == 0))


def phase_summary(table: pd.DataFrame, loop: LoopSummary | None) -> pd.DataFrame:
    """Seconds, % and ms per batch of each phase, over the training loop's lines, so "per batch" stays honest when
    others (set-up around it, an eval loop, helpers) were profiled too. Without a loop every line counts and per-batch
    is empty. (An optimizer's first call in a `main()` spent 2.6-4.2 s on imports, set-up counted as a step's.)"""
    import pandas as pd

    whole = loop is None or not loop.function  # no loop, or one no profiled line shows (hooked_loop)
    seconds = _through_calls(_callers(table) if whole else table[_in_loop(table, loop)], table)
    total = float(seconds.sum())
    return pd.DataFrame({"phase": list(PHASES), "seconds": seconds.to_numpy(dtype=float),
        "pct": (100.0 * seconds / total).to_numpy(dtype=float) if total > 0 else [0.0] * len(PHASES),
        "per_batch_ms": (1e3 * seconds / loop.batches).to_numpy(dtype=float) if not whole and loop.batches
        else [float("nan")] * len(PHASES)})


def _through_calls(rows: pd.DataFrame, table: pd.DataFrame, depth: int = 3) -> pd.Series:
    """Seconds a phase of these lines, where each 'other' (or named-for) line that calls one profiled function of the
    same file with phases of its own (`losses.append(train_step(model, batch, opt))`) is shared out as that function's
    lines are, and theirs in turn (`training_step` -> `compute_loss` -> `model(...)`: unseen o_4); so is the closure an
    `optimizer.step(closure)` runs (Lightning's automatic optimization: p_2, L-BFGS: o_3). Without it a step in
    a function of its own showed as 'other' (unseen d_4: 14.6 %, all of the step), and `self.compute_loss(batch)`,
    whose lines run the model too, as 'loss' alone (unseen h_1). A function with a loader loop of its own is no step's
    part: its wait counted as the training loader's (unseen j_5)."""
    seconds = rows.groupby("phase")["seconds"].sum().reindex(list(PHASES), fill_value=0.0)
    own = table[table["file"].isin(rows["file"]) & ~table["function"].isin(rows["function"])]
    stepping = own.groupby("function").filter(  # not one that waits on a loader: a validation pass (unseen j_5)
        lambda f: (f["phase"] != "other").any() and f["seconds"].sum() > 0 and not (f["phase"] == "data_wait").any())
    names = {f: re.escape(f.rpartition(".")[2]) for f in set(stepping["function"])}
    for f in [f for f in names if f.endswith(".__call__")]:  # `scaler = NativeScaler()`, then `scaler(loss, opt)`
        made = rf"([\w.]+)\s*=\s*{re.escape(f.rpartition('.')[0].rpartition('.')[2])}\s*\("  # (timm, MAE: unseen q_6)
        names[f] = "|".join({re.escape(m) for text in table["source"] for m in re.findall(made, text)}) or names[f]
    calls = {f: re.compile(_call_of(name)) for f, name in names.items()}  # `self.train_step(` too
    passed = {f: re.compile(rf"[(,=]\s*(?:{name})\s*[,)]") for f, name in names.items()}  # `optimizer.step(closure)`
    for line in rows.itertuples() if depth else ():
        named = calls if line.phase in ("other", "loss", "forward") else passed if line.phase == "optimizer" else {}
        if len(called := {f for f, pattern in named.items() if pattern.search(line.source)}) == 1:
            function = called.pop()
            name = function.rpartition(".")[2]
            share = _through_calls(stepping[stepping["function"] == function], table, depth - 1)
            # the rest of the line stays its own: the step's own update, or `dice_bce(model(x), y)`'s forward (y_6)
            own = named is passed or line.phase not in ("other", "loss" if LOSS_NAMES.search(name) else "forward")
            part = min(line.seconds, share.sum()) if own else line.seconds
            seconds = seconds.add(part * share / share.sum(), fill_value=0.0)
            seconds[line.phase] -= part
    return seconds
