"""The pipeline in one place: .lprof -> table -> phases -> facts -> advice -> `Report` -> files. `build_report` only
reads; `write_report` only writes. `profiling.plots` and `profiling.html` are imported when needed, so that a missing
plotting stack costs the pictures, not the report.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from dataclasses import replace
from typing import Any

import pandas as pd

from profiling.advice import advise
from profiling.argv import shown
from profiling.capture import loader_for_loop, read_loaders, read_trials
from profiling.curve import read_curve
from profiling.lprof import load_lprof
from profiling.precheck import (flag_choices, sixth_argument, takes_metrics_json, worker_flag, workers_assigned,
                                workers_from_slurm, workers_given, workers_set_at)
from profiling.phases import (classify_lines, hooked_loop, phase_summary, set_up_as_other, split_shared_lines,
                              training_loop)
from profiling.records import ProfileError, Report, plural
from profiling.render import render
from profiling.facts import Environment, job_facts, read_environment
from profiling.table import line_table, read_sources
from profiling.turns import LOADER_BOUND

CUDA_CAVEAT = ("CUDA caveat: line_profiler charges asynchronous GPU work to the line that waits for it (often "
               "`.to(device)`, `.item()` or `loss.backward()`), not to the line that launched it, so the compute "
               "phases' split can mislead on a GPU; the advice uses only the data wait and the compute lines' sum.")
WORKER_NOTE = ("line_profiler records only the main process: with num_workers > 0 the workers' time building batches "
               "shows only as the main process's wait for them (the loop header).")

KIT_ROOT = Path(__file__).resolve().parents[1]  # this kit's own scripts (not its tests' fixtures)

SUFFIXES = {"text": ".report.txt", "md": ".report.md", "json": ".report.json", "csv": ".lines.csv",  # beside the .lprof
            "html": ".report.html"}


def lprof_stem(lprof: Path, drop_script_suffix: bool = False) -> str:
    """`runs/123.lprof` -> `123`; with `drop_script_suffix`, kernprof's own `script.py.lprof` -> `script`."""
    name = lprof.name.removesuffix(".lprof")
    return name.removesuffix(".py") if drop_script_suffix else name


def sibling(lprof: Path, suffix: str) -> Path:
    """`runs/123.lprof` -> `runs/123<suffix>`: the files `run` writes beside a profile."""
    return lprof.with_name(lprof_stem(lprof) + suffix)


def read_meta(lprof: Path) -> tuple[dict[str, Any], list[str]]:
    """The run's `<stem>.meta.json`, if `run` wrote one; a broken one is a note, not a failure."""
    path = sibling(lprof, ".meta.json")
    if not path.is_file():
        return {}, []
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return {}, [f"ignored {path.name}: not readable JSON ({type(err).__name__})"]
    return (meta, []) if isinstance(meta, dict) else ({}, [f"ignored {path.name}: expected a JSON object"])


def read_samples(lprof: Path) -> tuple[pd.DataFrame | None, list[str]]:
    """GPU/CPU samples `run --sample-gpu` left beside the profile, for the utilisation plot."""
    path = sibling(lprof, ".samples.csv")
    if not path.is_file():
        return None, []
    try:
        return pd.read_csv(path), []
    except (OSError, ValueError) as err:
        return None, [f"ignored {path.name}: {type(err).__name__}"]


def is_kit_script(script: Path) -> bool:
    """One of the kit's own scripts, whose flags the hints may name: in the kit, not its tests, taking `--metrics-json`
    (benchmarks/styles imitate users' scripts, and get their edits)."""
    return (KIT_ROOT in script.parents and "tests" not in script.relative_to(KIT_ROOT).parts
            and takes_metrics_json(script))


def loader_notes(loaders: list[dict[str, Any]], loader: dict[str, Any] | None, status: str | None) -> list[str]:
    """What the run's other DataLoaders cost, where the advice cannot see it: the tried loader built anew (so never
    tried), loaders zipped with it (tried and edited on it alone), and loaders that restart their workers each pass."""
    at = (loader or {}).get("built_at")
    built = sum(e.get("built_at") == at and e.get("dataset") == loader.get("dataset") for e in loaders) if at else 0
    each = status == "tried" or (loader or {}).get("epochs", 1) >= 2  # each for epochs of its own (t_5: a round)
    notes = [f"the DataLoader at {at} was built {built} times" + (
        " (a fold, a stage, a round or a run each, say): worker counts are tried in the first one only" if each
        else ": its workers started anew each time and no worker count could be tried in it. Build it once, before the "
        "epoch loop")] if built > 1 and status != "compute-bound" else []
    waits: dict[tuple[str, str], tuple[float, float]] = {}  # a second stage's loop, which the advice does not cover
    for e in loaders:  # (the loaders built at one line and iterated at another, a probe of worker counts: t_4, told)
        if e.get("built_at") != at and e.get("iterated_at") != (loader or {}).get("iterated_at") and e.get("shuffles"):
            wait, seconds = waits.get((e["iterated_at"], e["built_at"]), (0.0, 0.0))
            waits[e["iterated_at"], e["built_at"]] = (wait + e["loop_wait_seconds"], seconds + e["loop_seconds"])
    notes += [f"the loop at {loop} waited {100 * wait / seconds:.0f}% of each step for the DataLoader at {line}: "
              "nothing was tried or edited there; profile that part alone"
              for (loop, line), (wait, seconds) in waits.items() if seconds and wait >= LOADER_BOUND * seconds]
    zipped = [e["built_at"] for e in loaders if loader and e.get("iterated_at") == loader.get("iterated_at") and
              e.get("built_at") != at and abs(e["batches"] - loader["batches"]) <= e["epochs"]]
    notes += [f"the loop at {loader['iterated_at']} also iterates the DataLoader at {' and '.join(zipped)} (zipped): "
              f"its wait counts theirs, but worker counts were tried and edited on the one at {at} only. Give the "
              "others the same settings, or profile each alone"] if loader and zipped else []
    return notes + list(dict.fromkeys(  # a validation loader, say (once for a line that built several)
        f"the DataLoader at {e['built_at']} started its workers anew for each of its {e['epochs']} passes: give it "
        "persistent_workers=True, and they start once" for e in loaders if e is not loader
        and (e.get("num_workers") or 0) > 0 and not e.get("persistent_workers") and e["epochs"] >= 3))


def build_report(lprof_path: str | Path, cpus: int | None = None, gpus: int | None = None,
                 num_workers: int | None = None, source_root: str | Path | None = None,
                 cores_per_gpu: int | None = None, environment: Environment | None = None,
                 curve_path: str | Path | None = None) -> Report:
    """Read a .lprof (with its metadata, loaders and loader curve: `curve_path`, else `<stem>.curve.json` if any)
    and compute everything the renderers show. ProfileError for a missing, unsafe, malformed or empty file."""
    lprof_path = Path(lprof_path)
    profile = load_lprof(lprof_path)
    meta, notes = read_meta(lprof_path)
    roots = [Path(r) for r in (source_root, meta.get("cwd")) if r] + [lprof_path.parent, Path.cwd()]
    sources, source_notes = read_sources(profile, dict.fromkeys(roots))
    record = sibling(lprof_path, ".loaders.json")
    loaders, trials = read_loaders(record), read_trials(record)
    for entry in [*loaders, trials.get("loader") or {}]:  # a module the script imports: named as the script
        entry.update({k: shown(str(entry[k]), meta.get("cwd") or ".") for k in ("built_at", "iterated_at")
                      if entry.get(k)})
    hooked = str((trials.get("loader") or {}).get("iterated_at", ""))
    table, loops, parse_notes = classify_lines(line_table(profile, sources), profile, sources, hooked)
    table, shared_notes = split_shared_lines(table, loops, hooked, trials.get("traced"))
    loop = training_loop(table, loops, hooked) or hooked_loop(loaders, trials)
    table = set_up_as_other(table, loop)
    loader = loader_for_loop(loaders, loop.file if loop else None, loop.header_line if loop else None,
                             trials.get("loader"))
    notes += loader_notes(loaders, loader, trials.get("status"))
    notes += [f"the script exited with code {meta['exit_code']}: this report covers what ran before it stopped"
              ] if meta.get("exit_code") not in (None, 0) else []
    facts = job_facts(cpus=cpus, gpus=gpus, num_workers=num_workers, cores_per_gpu=cores_per_gpu, meta=meta,
                      environment=environment if environment is not None else read_environment(meta), loader=loader)
    other = max((e for e in loaders if loader and e.get("built_at") != loader.get("built_at") and e.get("batches")),
                key=lambda e: e.get("num_workers") or 0, default={})  # more workers: set apart, no edit changes them
    if (other.get("num_workers") or 0) > (facts.num_workers or 0):  # (a feature extraction's, unseen n_5)
        facts = replace(facts, other_loader=other.get("built_at"), other_workers=other["num_workers"])
    if "built anew" in (trials.get("status") or ""):  # a new loader each epoch: persistent workers change nothing
        facts = replace(facts, persistent_workers=False)
    curve_file = Path(curve_path) if curve_path is not None else sibling(lprof_path, ".curve.json")
    curve = read_curve(curve_file) if curve_path is not None or curve_file.is_file() else None
    if curve is not None and curve.hold_ms <= 0:
        notes.append("the loader curve was timed alone (each batch taken at once): shown, not advised from; "
                     "what workers deliver alone is not what a loop beside them gets (docs/profiling-model.md)")
    argv, cwd = meta.get("argv") or [], meta.get("cwd") or "."  # the script `run` profiled, where it still is
    script = Path(cwd, argv[0]).resolve() if argv and isinstance(argv[0], str) else None
    if script is not None and script.is_file():  # the edits in its terms: its flag, or its DataLoader's line
        given, by_cpu, spread = workers_given(facts.loader_at or "?", cwd, facts.loader_call)
        loader_file = (facts.loader_at or "").rpartition(":")[0]
        after = workers_assigned([str(script), loader_file], cwd)  # `loader.num_workers = ...` once built
        given = given or (after and after[1])
        own_line = facts.loader_at and not facts.loader_built_by and not given  # sets none, or a number (n_5)
        flag = None if own_line else worker_flag(script, argv[1:], given)
        slurm = None if flag or own_line else workers_from_slurm([str(script), loader_file], cwd)
        facts = replace(facts, workers_flag=flag, kit_script=is_kit_script(script), by_cpu_count=by_cpu,
                        workers_given=given, loader_kwargs=spread, workers_from_slurm=slurm,
                        workers_set_at=None if flag or slurm else workers_set_at(script, given, argv[1:], cwd)
                        or (after and after[0]) or sixth_argument(facts.loader_at or "?", cwd),
                        persistent_workers=False if after else facts.persistent_workers)
    notes += [f"persistent_workers is not advised: {facts.epoch_told} tells the dataset its epoch in the main process, "
              "and persistent workers, forked once, would keep their first copy of it"] if facts.epoch_told else []
    notes += [f"{facts.workers_from_slurm} sets the worker count from SLURM_CPUS_PER_TASK: the #SBATCH line sets it, "
              "so the script is not edited (check that it gives the advised count)"] if facts.workers_from_slurm else []
    notes += [f"the DataLoader at {facts.loader_at} takes num_workers from a CPU count, which gives the advised count "
              "only by chance (and cpu_count() counts even the node's cores): the edit sets the count itself"
              ] if facts.by_cpu_count else []
    notes += [plural(f"{k} worker(s) left out of the trials: at that count torch refused the script's DataLoader "
                     f"options or its workers failed ({why}); the training went on without it")
              for k, why in (trials.get("refused") or {}).items()]
    samples, sample_notes = read_samples(lprof_path)
    notes += source_notes + parse_notes + shared_notes + sample_notes
    phases = phase_summary(table, loop)
    if loop is None:
        notes.append("no `for ... in <loader>` loop found in the profiled functions: the line table is "
                     "complete, but there is no data wait to base num_workers advice on")
    elif not loop.function:
        notes.append(f"no `for ... in <loader>` loop in the profiled functions: the loop that iterates the loader at "
                     f"{loop.file}:{loop.header_line} was timed through its DataLoader, and the phases cover every "
                     f"profiled line")
    else:
        others = table[(table["file"] != loop.file) | (table["function"] != loop.function)]
        outside = float(table["seconds"].sum() - phases["seconds"].sum())  # every profiled second no phase holds
        if outside >= 5e-4:  # (what would read "0.000 s" is not said)
            own = outside - float(others["seconds"].sum())  # (others overlap: main() holds the loop's call)
            parts = [f"its lines outside the loop ({own:.3f} s: set-up, per-epoch work)"] if own >= 5e-4 else []
            parts += [f"{others['function'].nunique()} other profiled function(s) (those the loop calls are in "
                      "its phases too)"] if len(others) else []
            notes.append(f"phases cover the loop in {loop.function}() (lines {loop.lines[0]}-{loop.lines[1]}) only; "
                         f"{' and '.join(parts)} are in the line table")
    notes += [CUDA_CAVEAT] if facts.gpus >= 1 else []            # only a GPU run computes asynchronously
    notes += [WORKER_NOTE] if facts.num_workers != 0 else []     # only workers build batches out of sight
    advice = advise(loop, facts, curve=curve, trials=trials)
    at, allowed = (script and facts.workers_flag and flag_choices(script, facts.workers_flag, cwd)) or ("", [])
    if allowed and advice.num_workers not in (None, *allowed):  # argparse would refuse the edit
        whole = allowed == list(range(allowed[0], allowed[-1] + 1))  # 0-8, else each: 0, 1, 2, 4
        span = f"{allowed[0]}-{allowed[-1]}" if whole else ", ".join(map(str, allowed))
        notes.insert(0, f"{facts.workers_flag} takes {span} only (its choices, {at}): widen them to give it "
                        f"{advice.num_workers}")
    return Report(lprof_path=lprof_path, lines=table, phases=phases, facts=facts, advice=advice, notes=notes,
                  meta=meta, samples=samples, loop=loop, curve=curve)


def write_report(report: Report, out_dir: str | Path, stem: str, formats: Iterable[str]) -> list[Path]:
    """Write `<stem>.report.txt/.md/.json/.html`, `<stem>.lines.csv` and the PNG plots; return the paths."""
    (out_dir := Path(out_dir)).mkdir(parents=True, exist_ok=True)
    formats = list(dict.fromkeys(formats))
    if unknown := [f for f in formats if f not in SUFFIXES]:
        raise ProfileError(f"unknown report format(s): {', '.join(unknown)}")
    plot_paths: list[Path] = []
    try:
        from profiling.plots import write_plots
    except ImportError as err:
        report.notes.append(f"no plots: {err}")
    else:
        plot_paths = list(write_plots(report, out_dir, stem))
    written = [out_dir / f"{stem}{SUFFIXES[fmt]}" for fmt in formats]
    for fmt, path in zip(formats, written):
        path.write_text(render(report, fmt, plot_paths=plot_paths), encoding="utf-8")
    return written + plot_paths
