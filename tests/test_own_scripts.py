"""A user's own training scripts, profiled unmodified (tests/data/own_scripts/, written for these tests).

Each is a different style: workers set in code, `-j/--workers`, no argparse, the DataLoader built in a
helper or through functools.partial, the loop in a class method, the loop in an imported module (found and
profiled with the script), `profile` imported from torch.profiler, train + validation loaders, steps pulled by
hand with next(it) and no epochs, a step in a function of its own. Each real `run` must find the loop, read the
workers from the script's own DataLoader and name that DataLoader's line (or the script's own worker flag) in the
edits, never a flag the script lacks.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from collections.abc import Sequence
from pathlib import Path

import pytest

from profiling.edits import script_edits
from profiling import report as report_module
from profiling.precheck import (epoch_told, flag_choices, loop_module, unreachable_loop, worker_flag, workers_given,
                                workers_set_at)
from profiling.records import Report
from profiling.report import KIT_ROOT, build_report, is_kit_script

OWN = Path(__file__).resolve().parent / "data" / "own_scripts"

# script, extra run flags, script args, loop function, DataLoader line, workers it uses, its worker flag
CASES = [
    ("workers_in_code.py", [], [], "train", 9, 2, None),
    ("dash_j_workers.py", [], ["-j", "1"], "main", 17, 1, "--workers"),
    ("no_argparse.py", [], [], "run", 12, 0, None),
    ("loader_in_helper.py", [], ["--num-workers", "0"], "fit", 21, 0, "--num-workers"),
    ("loop_in_method.py", [], [], "Trainer.train_epoch", 10, 1, None),
    ("loop_in_module.py", [], [], "train_one_epoch", 11, 0, None),  # its module found and profiled too
    ("torch_profiler_import.py", [], [], "train", 10, 1, None),  # the name `profile` is torch.profiler's
    ("train_and_val.py", [], ["--workers", "1"], "main", 20, 1, "--workers"),
    ("subcommands.py", [], ["fit", "--num-workers", "1"], "fit", 11, 1, "fit ... --num-workers"),  # after `fit`
    ("env_workers.py", [], [], "train", 13, 1, "export NUM_WORKERS="),  # set in the job script, read by the script
    ("step_based.py", [], [], "train", 12, 1, None),
    ("loader_from_partial.py", [], [], "train", 30, 1, None),  # the edit names make_loader, what the line calls
    ("loader_subclass.py", [], [], "train", 37, 1, None),  # built and iterated through a subclass's own methods
]
CALLS = {"loader_from_partial.py": "make_loader", "loader_subclass.py": "DeviceLoader"}  # else DataLoader


def dlprof(repo: Path, *args: str, cwd: Path, **popen) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "profiling", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, **popen)


@pytest.mark.parametrize("name, flags, args, function, line, workers, flag", CASES, ids=[c[0] for c in CASES])
def test_unmodified_script_is_profiled_in_its_own_terms(tmp_path, repo, name, flags, args, function, line,
                                                        workers, flag):
    script = OWN / name
    assert "@profile" not in script.read_text()
    done = dlprof(repo, "run", "--output-dir", str(tmp_path), "--formats", "text", *flags, "--", str(script), *args,
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = "the training loop is in your module mypkg.engine: profiling it too (--module mypkg.engine)"
    assert (found in done.stderr) == (name == "loop_in_module.py"), done.stderr
    report = build_report(tmp_path / f"{script.stem}.lprof")
    assert report.loop is not None and report.loop.function.endswith(function)
    where = f"{script}:{line}"
    assert report.facts.num_workers == workers and report.facts.loader_at == where
    assert f"num_workers from the script's DataLoader ({where})" in report.facts.source
    assert report.facts.workers_flag == flag and not report.facts.kit_script
    advice = report.advice
    assert advice.edits[0] == f"#SBATCH --cpus-per-task={advice.cpus_per_task}"
    default = {"loop_in_method.py": f"{script}:8  def __init__(..., workers={advice.num_workers}, ...)"}.get(name)
    for edit in advice.edits[1:]:  # the script's own flag, the parameter that sets it, or its DataLoader's own line
        call = CALLS.get(name, "DataLoader")
        spaced = f"{flag} {advice.num_workers}" if flag and not flag.endswith("=") else f"{flag}{advice.num_workers}"
        assert edit in (spaced, default) or edit.startswith(f"{where}  {call}(..., "), edit
    line_edits = [e for e in advice.edits if e.startswith(where)]
    if flag is None and advice.num_workers != workers:  # a parameter's default is changed there (unseen s_4)
        assert default in advice.edits if default else f"num_workers={advice.num_workers}" in line_edits[0]
    if advice.num_workers >= 1 and name in {"workers_in_code.py", "loop_in_method.py"}:  # already persistent
        assert not any("persistent_workers" in e for e in advice.edits)
    elif advice.num_workers >= 1:  # a count a flag sets stays safe to set to 0: persistent only with workers
        given = report.facts.workers_given
        assert line_edits and f"persistent_workers={given + ' > 0' if flag and given else True}" in line_edits[0]
    assert not any("mnist_classify.py" in text for text in advice.reasons + advice.notes)
    assert "CUDA caveat" not in " ".join(report.notes)  # a CPU-only run
    assert ("line_profiler records only the main process" in " ".join(report.notes)) == (workers > 0)
    if name == "step_based.py":  # `try: next(it)` runs once more than the batches: the header counted 17 (unseen q_3)
        assert report.loop.batches == report.advice.numbers.traced_batches == 16, report.loop


def test_only_the_kits_own_scripts_get_the_kits_flag_hints():
    """The styles in benchmarks/styles live inside the kit but were written as other people write: an H100
    report on conv_default1.py (num_workers set in a dict) gave no training-script edit at all, since it
    was taken for a kit script whose own flags cover the rest."""
    assert is_kit_script(KIT_ROOT / "mnist_classify.py") and is_kit_script(KIT_ROOT / "small_files" / "train.py")
    assert not is_kit_script(KIT_ROOT / "benchmarks" / "styles" / "conv_default1.py")
    assert not is_kit_script(OWN / "workers_in_code.py")  # the tests' fixtures
    assert not is_kit_script(Path("/elsewhere/train.py"))  # a user's script outside the kit


@pytest.mark.parametrize("name, modules, expected", [
    ("module_level_loop.py", [], "module_level_loop.py:9 runs at module level"),
    ("spawned_loop.py", [], "processes that {script}:19 starts (spawn), and line_profiler records only the process "
                            "it starts: for the profile, call main_worker() directly, in one process"),
    ("spawned_module_loop.py", ["mypkg.engine"], "processes that {script}:18 starts (spawn), and line_profiler "
                                                 "records only the process it starts: for the profile, call "
                                                 "main_worker() directly"),  # `run` adds the module itself
    ("hogwild_processes.py", ["mypkg.hogwild"], "processes that {script}:13 starts (Process), and line_profiler "
                                                "records only the process it starts: for the profile, call train() "
                                                "directly"),  # the target imported from the module (unseen ad_1)
])
def test_precheck_refuses_an_unreachable_loop_before_the_script_runs(tmp_path, repo, name, modules, expected):
    script = str(OWN / name)
    start = time.perf_counter()
    message = unreachable_loop(script, modules, decorated_only=False)
    expected = expected.format(script=script)
    assert time.perf_counter() - start < 1.0 and expected in message
    done = dlprof(repo, "run", "--output-dir", str(tmp_path / "out"), "--", script, cwd=tmp_path)
    assert done.returncode == 2 and expected in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "trained" not in done.stdout and not (tmp_path / "out").exists()  # nothing ran, nothing written
    assert unreachable_loop(str(OWN / "loop_in_module.py"), ["mypkg.engine"], decorated_only=False) is None
    assert loop_module(str(OWN / "loop_in_module.py"), []) == "mypkg.engine"  # `run` adds it (CASES)
    assert loop_module(str(OWN / "loop_in_module.py"), ["mypkg.engine"]) is None  # named already
    assert loop_module(str(OWN / "workers_in_code.py"), []) is None  # the loop is in the script


def test_a_loop_at_module_level_is_timed_through_its_dataloader_not_refused(tmp_path, repo):
    """PyTorch's tutorials train at module level, beside a model class. line_profiler cannot time the loop's lines,
    but the DataLoader hook can time the loop, as it does a framework's: the run trains, tries worker counts in the
    epochs after the first, and advises from the loop it timed. (With no function at all to profile, as in
    module_level_loop.py, the run is still refused: kernprof would record nothing.)"""
    script = OWN / "module_level_tutorial.py"
    assert unreachable_loop(str(script), [], decorated_only=False) is None
    # two counts, the run's own and one more, in five untraced epochs: a CI run beside two other profiling jobs ran
    # out of batches for three (each turn lasts twice a worker start, slow on a busy machine)
    done = dlprof(repo, "run", "--formats", "text", "--try-workers", "1,2", "--segment-seconds", "0.05",
                  "--output-dir", str(tmp_path), "--", str(script), cwd=tmp_path)
    assert done.returncode == 0 and "trained" in done.stdout, done.stderr
    report = build_report(tmp_path / "module_level_tutorial.lprof")
    assert report.loop is not None and (report.loop.header_line, report.loop.function) == (31, "")
    assert report.advice.num_workers is not None and report.advice.numbers.basis == "tried", report.advice
    assert any("module_level_tutorial.py:31 was timed through its DataLoader" in note for note in report.notes)
    # its phase table has the profiled functions' lines only, no data-wait row: the title says whose lines (unseen v_2
    # read "Phases:" with forward, loss and other beside a header that said the loop waited 94 % of each step)
    assert "Phases of the profiled lines (the loop's own ran unprofiled: its wait is above):" in done.stdout


def test_a_loop_timed_only_through_its_dataloader_falls_back_to_the_curve_when_too_short_to_try(tmp_path, repo):
    """A run too short for worker trials (turns of 60 s here) still gets advice, from the loader curve, and its first
    line says so, for a loop no profiled line shows as for any other: not "no loop was found"."""
    done = dlprof(repo, "run", "--formats", "text", "--try-workers", "0,1", "--segment-seconds", "60",
                  "--curve-seconds", "0.2", "--output-dir", str(tmp_path), "--", str(OWN / "module_level_tutorial.py"),
                  cwd=tmp_path)  # two counts: on any machine, one count alone would be decided on the untraced part
    assert done.returncode == 0 and "trained" in done.stdout, done.stderr
    head = done.stdout.split("ADVICE\n")[1].splitlines()[0]
    assert "(measured: loader curve; fallback: too short to try worker counts" in head, head
    assert build_report(tmp_path / "module_level_tutorial.lprof").loop.function == ""


def framework_run(tmp_path: Path, repo: Path, script: Path) -> subprocess.CompletedProcess:
    """`profiling run` of a script whose loop is in an installed framework (tests/data/framework/site-packages)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=f"{repo}{os.pathsep}{OWN.parent / 'framework' / 'site-packages'}", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "profiling", "run", "--try-workers", "0,1,2", "--segment-seconds",
                           "0.3", "--output-dir", str(tmp_path), "--formats", "text", "--", str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def line_of(path: Path, text: str) -> int:
    return 1 + next(i for i, line in enumerate(path.read_text().splitlines()) if text in line)


def profiled_report(repo: Path, tmp_path: Path, script: Path, *flags: str, args: Sequence[str] = ()) -> Report:
    """`run` a fixture with `flags`, its outputs in tmp_path; it must exit 0. Its report, as `report` builds it."""
    done = dlprof(repo, "run", *flags, "--output-dir", str(tmp_path), "--", str(script), *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return build_report(tmp_path / f"{script.stem}.lprof")


def test_a_dataloader_built_anew_every_epoch_is_named_with_what_to_change(tmp_path, repo):
    """Each epoch's new DataLoader is a loader of one epoch, so no worker count can be tried in it: the report must
    say why and what to change, and the training must still run all its epochs."""
    done = dlprof(repo, "run", "--formats", "text", "--curve-seconds", "0.2", "--output-dir", str(tmp_path), "--",
                  str(OWN / "loader_each_epoch.py"), "--epochs", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [f"epoch {e} done" in done.stdout for e in range(3)] == [True] * 3
    report = build_report(tmp_path / "loader_each_epoch.lprof")
    said = [n for n in report.notes if "was built 3 times" in n]
    assert said and "loader_each_epoch.py:26" in said[0] and "Build it once, before the epoch loop" in said[0], said
    # the loop's steps outnumber the first loader's batches, but it asked new loaders for them: no "kept batches"
    assert "kept batches" not in report.advice.numbers.fallback and "all traced" not in done.stdout, done.stdout
    # tracing stopped as the second epoch's loader came: one epoch traced, the first line says why, and no
    # persistent_workers edit, which a loader built anew would never use (unseen r_4: "the run ended within the traced
    # part", 188 batches traced where the header said 47)
    assert report.loop.batches == 8 and "built anew every epoch" in report.advice.numbers.fallback, report.loop
    assert not any("persistent_workers" in e for e in report.advice.edits), report.advice.edits


def test_two_loaders_zipped_in_one_loop_count_both_waits_and_the_report_names_the_second(tmp_path, repo):
    """`zip(labelled, unlabelled)`, the second the slow one: the untraced wait counted the first loader's only, so a
    loop that waited 95 % of each step (traced) was called compute-bound, "keep num_workers=1". Both waits count
    now, and a note names the loader whose workers were not tried. Plain and profiled runs train alike."""
    script = OWN / "zipped_loaders.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"OMP_NUM_THREADS": "1"}
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    done = dlprof(repo, "run", "--formats", "text", "--output-dir", str(tmp_path), "--", str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert plain.returncode == 0 and done.stdout.count("epoch ") >= 4, done.stdout
    assert [line for line in done.stdout.splitlines() if line.startswith("epoch ")] == plain.stdout.splitlines()
    record = json.loads((tmp_path / "zipped_loaders.loaders.json").read_text())
    untraced = record["trials"]["untraced"]
    assert untraced["steps"] >= 10 and untraced["wait_seconds"] > 0.5 * untraced["seconds"], untraced
    report = build_report(tmp_path / "zipped_loaders.lprof")
    numbers = report.advice.numbers
    assert numbers.loader_bound and numbers.wait_pct > 50 and "compute_bound" not in report.advice.fired_rules
    first, second = line_of(script, "labelled = DataLoader("), line_of(script, "unlabelled = DataLoader(")
    said = [n for n in report.notes if "(zipped)" in n]
    assert said and f"zipped_loaders.py:{second} (zipped)" in said[0], report.notes
    assert f"tried and edited on the one at {script}:{first} only" in said[0], said
    assert all(str(first) in e.split()[0] for e in report.advice.edits[1:]), report.advice.edits


def test_a_loader_whose_workers_start_anew_at_every_pass_inside_the_loop_is_named(tmp_path, repo):
    """Validation every 4 steps inside the training loop, its worker not persistent: 12 passes, 12 starts, which the
    phase table shows only as `other`. The note names its line; the training loader, persistent, is not named. The
    profiled run trains as the plain one: the trials once drew a seed that a persistent loader's reset never draws,
    and the second epoch's order (and loss) moved (2.226 against 2.216)."""
    script = OWN / "val_inside_loop.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"OMP_NUM_THREADS": "1"}
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    done = dlprof(repo, "run", "--formats", "text", "--output-dir", str(tmp_path), "--", str(script), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.count("epoch ") >= 2, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("epoch ")] == plain.stdout.splitlines()
    report = build_report(tmp_path / "val_inside_loop.lprof")
    notes = report.notes
    said = [n for n in notes if "started its workers anew" in n]
    val_line = line_of(script, "val_loader = DataLoader(")
    assert len(said) == 1 and f"val_inside_loop.py:{val_line} started its workers anew for each of its 12 passes" \
        in said[0] and "persistent_workers=True" in said[0], notes
    # the 0.05 s of set-up before the loop is no phase's: the note gives it, the phases leave it out
    outside = [n for n in notes if n.startswith(f"phases cover the loop in train() (lines {report.loop.lines[0]}-")]
    assert outside and float(outside[0].split("outside the loop (")[1].split(" s")[0]) >= 0.05, notes
    assert report.phases["seconds"].sum() + 0.05 <= report.lines["seconds"].sum()


def test_a_loop_in_a_frameworks_trainer_is_timed_through_its_dataloader_and_advised(tmp_path, repo):
    """The loop is in installed code (a stand-in for Lightning's Trainer.fit): no profiled line shows it, so
    the run is not refused, and the report rests on the loop the DataLoader hook timed untraced, with the
    worker counts tried in it. As Lightning does, the trainer wraps DataLoader.__init__ while the script builds its
    loader, and iterates two validation batches first: the edit names the script's own DataLoader line, not the
    wrapper's, and the training loader, which shuffles, is the one timed."""
    script = OWN / "framework_fit.py"
    assert unreachable_loop(str(script), [], decorated_only=False) is None
    done = framework_run(tmp_path, repo, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("done, loss") == 4  # every epoch trained
    # the validation loader's two batches came first; the one timed and tried is the training loader, iterated
    # inside the installed trainer, called from the script's fit() line
    trials = json.loads((tmp_path / "framework_fit.loaders.json").read_text())["trials"]
    fit_line, built_line = line_of(script, ".fit(Classifier()"), line_of(script, "shuffle=True")
    assert trials["loader"] == {"built_at": f"{script}:{built_line}", "iterated_at": f"{script}:{fit_line}"}
    assert trials["traced_batches"] == 24
    report = build_report(tmp_path / "framework_fit.lprof")
    loop = report.loop
    assert loop is not None and loop.function == "" and loop.header_line == fit_line, loop
    numbers = report.advice.numbers
    assert numbers.basis == "tried" and set(numbers.tried) == {0, 1, 2}
    assert report.advice.edits[1].startswith(
        f"{script}:{built_line}  DataLoader(..., num_workers={report.advice.num_workers}")
    text = (tmp_path / "framework_fit.report.txt").read_text()
    assert "timed through its DataLoader" in text and "(measured in your run" in text


def test_a_loader_a_framework_builds_itself_is_edited_through_the_framework(tmp_path, repo):
    """Hugging Face's Trainer builds its own DataLoader: no line of the script builds one, so the edit names the
    script's line that called the framework and says to set the workers where that framework takes them."""
    script = OWN / "framework_builds_loader.py"
    assert unreachable_loop(str(script), [], decorated_only=False) is None  # it names a Trainer
    done = framework_run(tmp_path, repo, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("done, loss") == 4
    train_line = line_of(script, "trainer.train()")
    loader = json.loads((tmp_path / "framework_builds_loader.loaders.json").read_text())["loaders"][0]
    assert loader["built_at"] == loader["iterated_at"] == f"{script}:{train_line}" and loader["built_by"] == "tinyhf"
    report = build_report(tmp_path / "framework_builds_loader.lprof")
    assert report.advice.numbers.basis == "tried"
    assert report.advice.edits[1] == (f"{script}:{train_line}  tinyhf builds the DataLoader from this line: give it "
                                      f"num_workers={report.advice.num_workers}, persistent_workers=True where "
                                      "tinyhf takes its DataLoader options")


def test_a_loader_class_of_an_installed_library_is_named_in_the_edit(tmp_path, repo):
    """Unseen aa_6: `wds.WebLoader(dataset, ..., num_workers=workers)` builds torch's DataLoader inside webdataset, and
    the edit read `DataLoader(..., persistent_workers=...)` at a line that calls no DataLoader."""
    script = OWN / "installed_loader_class.py"
    done = framework_run(tmp_path, repo, script)
    assert done.returncode == 0, done.stderr
    assert [line.split()[1] for line in done.stdout.splitlines() if line.startswith("epoch ")] == ["0", "1", "2", "3"]
    line = line_of(script, "wds.WebLoader(")
    loader = json.loads((tmp_path / "installed_loader_class.loaders.json").read_text())["loaders"][0]
    assert loader["built_at"] == f"{script}:{line}" and loader["built_by"] is None, loader
    assert loader["call"] == "wds.WebLoader", loader
    report = build_report(tmp_path / "installed_loader_class.lprof")
    assert report.advice.edits[1].startswith(f"{script}:{line}  wds.WebLoader(..., "), report.advice.edits


def test_no_worker_traces_even_when_forked_while_no_profiled_function_runs(tmp_path, repo):
    """In a framework's trainer started from module level, no profiled function runs when the workers fork: the
    profiled `__getitem__`'s wrapper must not turn line tracing on in them (it did: 3x a batch on an H200)."""
    notes = tmp_path / "notes.txt"
    script = OWN.parent / "framework" / "traced_workers.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=f"{repo}{os.pathsep}{OWN.parent / 'framework' / 'site-packages'}", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "profiling", "run", "--try-workers", "off", "--output-dir",
                           str(tmp_path / "out"), "--formats", "text", "--", str(script), "--out", str(notes)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("done, loss") == 2
    seen = [line.split() for line in notes.read_text().splitlines()]
    assert len({pid for pid, _ in seen}) >= 4 and len(seen) >= 2 * 96  # two workers an epoch, two epochs
    assert all(traced == "False" for _, traced in seen), [s for s in seen if s[1] == "True"][:3]


def test_a_module_passed_with_module_is_the_users_own_code_even_when_installed(tmp_path, repo):
    """`--module mypkg.engine` from a site-packages folder (a user's package installed without -e): its loop is still
    where the loader was iterated, not the script's line that called it, as it would be for a framework's code."""
    shutil.copytree(OWN / "mypkg", tmp_path / "site-packages" / "mypkg")
    script = Path(shutil.copy(OWN / "loop_in_module.py", tmp_path / "loop_in_module.py"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=f"{repo}{os.pathsep}{tmp_path / 'site-packages'}", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "profiling", "run", "--output-dir", str(tmp_path / "out"), "--formats",
                           "text", "--module", "mypkg.engine", "--", str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    engine = tmp_path / "site-packages" / "mypkg" / "engine.py"
    loader = json.loads((tmp_path / "out" / "loop_in_module.loaders.json").read_text())["loaders"][0]
    assert loader["iterated_at"] == f"{engine}:{line_of(engine, 'for features, target in loader')}", loader
    assert loader["built_at"] == f"{script}:{line_of(script, 'DataLoader(')}" and loader["built_by"] is None
    report = build_report(tmp_path / "out" / "loop_in_module.lprof")
    assert report.loop is not None and report.loop.function.endswith("train_one_epoch")


def test_the_scripts_own_arguments_are_never_kernprofs(tmp_path, repo):
    """`-c config.json` is kernprof's literal code and `--out` an ambiguous prefix of its options: both reach the
    script (kernprof ran "config.json" as code, and refused `--out`)."""
    (tmp_path / "config.json").write_text('{"workers": 0}')
    done = dlprof(repo, "run", "--output-dir", str(tmp_path / "o"), "--formats", "text", "--",
                  str(OWN / "config_flags.py"), "-c", "config.json", "--out", "results", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "trained with {'workers': 0}, results in results" in done.stdout and "ADVICE" in done.stdout


def test_an_argument_error_is_not_blamed_on_profile(tmp_path, repo):
    done = dlprof(repo, "run", "--output-dir", str(tmp_path), "--", str(OWN / "dash_j_workers.py"), "--bogus",
                  cwd=tmp_path)
    assert done.returncode == 2 and "unrecognized arguments: --bogus" in done.stderr
    assert "@profile" not in done.stderr and "stopped before its training loop; no report" in done.stderr
    assert "ADVICE" not in done.stdout


def test_ctrl_c_exits_130_with_the_report_written(tmp_path, repo):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "profiling", "run", "--output-dir", str(tmp_path), "--formats", "text", "--",
               str(OWN / "loader_in_helper.py"), "--num-workers", "0", "--epochs", "100000"]
    with subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as wrapper:
        for text in wrapper.stdout:  # wait until the loop has run an epoch or two
            if "epoch 1 done" in text:
                break
        os.killpg(wrapper.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
        out, err = wrapper.communicate(timeout=120)
    assert wrapper.returncode == 130, err
    assert "interrupted" in err and (tmp_path / "loader_in_helper.report.txt").is_file()
    assert "Training loop:" in out


def _run_until(tmp_path, repo, script, line, *args):
    """`run` of a long script in a session of its own, once its output shows `line`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "profiling", "run", "--output-dir", str(tmp_path), "--formats", "text", "--",
               str(OWN / script), *args]
    wrapper = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    for text in wrapper.stdout:
        if line in text:
            break
    return wrapper


@pytest.mark.parametrize("to_all", [False, True], ids=["kill PID", "Slurm's time limit: every process"])
def test_sigterm_exits_143_with_the_report_written_and_no_process_left(tmp_path, repo, to_all):
    """A batch script's `kill $PID`, scancel or a time limit sends SIGTERM: `run` died of it at once and left its
    child training, unreported. Now the child stops as at Ctrl-C and the report is written."""
    with _run_until(tmp_path, repo, "loader_in_helper.py", "epoch 1 done", "--num-workers", "0",
                    "--epochs", "100000") as wrapper:
        (os.killpg if to_all else os.kill)(wrapper.pid, signal.SIGTERM)
        out, err = wrapper.communicate(timeout=120)
    assert wrapper.returncode == 143, err
    assert "stopped by SIGTERM" in err and "Traceback" not in err, err
    assert (tmp_path / "loader_in_helper.report.txt").is_file() and "Training loop:" in out
    # this run's own session only: other tests run the same script beside it (pytest -n 2)
    leftover = subprocess.run(["pgrep", "-s", str(wrapper.pid)], capture_output=True, text=True)
    assert leftover.stdout == "", "a profiled process outlived `run`"


def test_a_dataloader_worker_under_run_still_dies_of_sigterm(tmp_path, repo):
    """`run` turns a SIGTERM into a Ctrl-C in the profiled process; its forked workers must keep the default: torch
    terminates a worker that did not stop in time, and one blocked in C would never run a Python handler."""
    done = dlprof(repo, "run", "--formats", "text", "--output-dir", str(tmp_path), "--",
                  str(OWN / "worker_sigterm.py"), cwd=tmp_path)
    assert done.returncode == 0 and "worker SIGTERM default: True" in done.stdout, done.stdout + done.stderr


def test_sigusr1_sent_to_run_reaches_the_script_which_stops_as_it_would_plain(tmp_path, repo):
    """`--signal=B:USR1@90` with `trap 'kill -USR1 $PID' USR1`: the script's own handler finishes the epoch and exits 0
    (run's default action for SIGUSR1 was to die, exit 138, with no report)."""
    with _run_until(tmp_path, repo, "preemptible.py", "epoch 1 done") as wrapper:
        os.kill(wrapper.pid, signal.SIGUSR1)
        out, err = wrapper.communicate(timeout=120)
    assert wrapper.returncode == 0, err
    assert "stopping after epoch" in out and "passed SIGUSR1 on to the script" in err, out + err
    assert (tmp_path / "preemptible.report.txt").is_file() and "Training loop:" in out


def test_a_child_stopped_by_sigint_is_an_interruption_whenever_the_wrapper_hears_of_it():
    """CI once saw the child die of SIGINT (-2) before the wrapper's own SIGINT was handled: the
    wrapper then exited 254. The exit code must not depend on which process the signal hit first."""
    from profiling.runner import EXIT_INTERRUPTED, EXIT_TERMINATED, Noted, _exit_code

    assert _exit_code(-signal.SIGINT, []) == EXIT_INTERRUPTED  # the child re-raised it on its way out
    assert _exit_code(1, [signal.SIGINT]) == EXIT_INTERRUPTED  # kernprof caught it and chose 1
    assert _exit_code(3, []) == 3 and _exit_code(0, []) == 0
    assert _exit_code(-signal.SIGTERM, []) == _exit_code(EXIT_INTERRUPTED, [signal.SIGTERM]) == EXIT_TERMINATED
    assert _exit_code(-signal.SIGKILL, []) == 137  # as a shell says
    with Noted() as noted:
        os.kill(os.getpid(), signal.SIGINT)  # noted, not raised: the report still gets written
        time.sleep(0.05)
    assert noted == [signal.SIGINT]


@pytest.mark.slow
def test_sweep_of_a_script_without_a_worker_flag(tmp_path, repo):
    """Workers set through the hook, throughput from the loader's own batches, a bounded run each."""
    import json

    script = OWN / "workers_in_code.py"  # num_workers=2 in code, no flag at all
    done = dlprof(repo, "sweep", "--workers", "0,1", "--batches", "6", "--output-dir", str(tmp_path / "sw"),
                  "--", str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    rows = {row["workers"]: row for row in result["results"]}
    assert {0, 1} <= set(rows) and all(row["status"] == "ok" and row["images_per_sec"] > 0 for row in rows.values())
    assert result["knee"] in rows and result["advice"] is not None
    for workers in (0, 1):
        [loader] = json.loads((tmp_path / "sw" / f"w{workers}" / "loaders.json").read_text())["loaders"]
        assert loader["num_workers"] == workers and loader["batches"] == 6  # set by the hook, then stopped
        assert loader["built_at"].endswith("workers_in_code.py:9")
    assert "epoch 0" not in (tmp_path / "sw" / "w0" / "log.txt").read_text()  # stopped inside the first epoch
    assert "num_workers=1)" not in done.stdout.split("\n")[0]  # no guessed worker count announced


@pytest.mark.slow
@pytest.mark.slurm
def test_sweep_of_a_script_without_a_worker_flag_through_slurm(slurm, tmp_path, repo):
    """The same hook in a Slurm job through submitit: workers set, batches counted, a clean stop."""
    import json

    site = tmp_path / "site.env"
    site.write_text("export SBATCH_PARTITION=debug\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=str(repo), OMP_NUM_THREADS="1", DLKIT_SITE_ENV=str(site))
    done = subprocess.run([sys.executable, "-m", "jobs", "submit", "sweep", "--script", str(OWN / "workers_in_code.py"),
                           "--workers", "0", "--gpus", "0", "--batches", "4", "--time-min", "5",
                           "--folder", str(tmp_path / "sw")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    row = {r["workers"]: r for r in result["results"]}[0]
    assert row["status"] == "ok" and row["images_per_sec"] > 0 and row["detail"].startswith("job ")
    [loader] = json.loads((tmp_path / "sw" / "w0" / "loaders.json").read_text())["loaders"]
    assert (loader["num_workers"], loader["batches"]) == (0, 4)


def test_a_script_that_ends_with_os_exit_is_still_profiled_and_exits_with_its_code(tmp_path, repo):
    """`os._exit` skips kernprof's `finally` and every atexit handler: such a script left no profile ("kernprof wrote
    no profile ... nothing to report", exit 1). In the main thread it now ends kernprof's run first; the forked
    worker's own os._exit is left alone, or the worker would never exit."""
    script = OWN / "os_exit.py"
    for code in (0, 3):
        out = tmp_path / str(code)
        done = dlprof(repo, "run", "--formats", "text,json", "--output-dir", str(out), "--", str(script), "--code",
                      str(code), cwd=tmp_path)
        assert done.returncode == code, done.stderr
        assert [line for line in done.stdout.splitlines() if line.startswith("epoch ")] == [f"epoch {e}" for e in
                                                                                         range(3)]
        assert (out / "os_exit.lprof").is_file() and (out / "os_exit.report.json").is_file()
        trials = json.loads((out / "os_exit.loaders.json").read_text())["trials"]  # written by the atexit handler
        assert trials["traced_batches"] == 16 and trials["untraced"]["steps"] > 0
        assert f"Training loop: {script}:{line_of(script, 'for x, y in loader:')} in train()" in done.stdout


@pytest.mark.parametrize("name", ["compiled_model.py", "scripted_model.py"])
def test_a_script_that_compiles_its_model_trains_under_the_profiler_as_it_does_plain(tmp_path, repo, name):
    """`torch.compile(model)` with `forward` line-profiled: Dynamo traced into line_profiler's wrapper and the script
    died at its first batch (exit 1), while it ran plain. Its wrapper's frames are now skipped by Dynamo, so the
    profiled run trains every epoch with the plain run's losses, and the report finds its loop. `torch.jit.script`
    compiled the wrapper itself (unseen k_3): the scripted classes get their own functions back first."""
    script = OWN / name
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"OMP_NUM_THREADS": "1"}
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    done = dlprof(repo, "run", "--formats", "text", "--output-dir", str(tmp_path), "--", str(script), cwd=tmp_path)
    assert plain.returncode == 0 and done.returncode == 0, done.stderr
    epochs = [line for line in done.stdout.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 3 and epochs == plain.stdout.splitlines(), (epochs, plain.stdout)
    assert f"Training loop: {script}:{line_of(script, 'for x, y in loader:')} in train()" in done.stdout


def test_a_step_in_a_function_of_its_own_shows_in_the_phases_of_the_loop_that_calls_it(tmp_path, repo):
    """`losses.append(train_step(...))` is the loop's only line besides its header: the phase table called the whole
    step `other` (unseen d_4). The call's seconds are now shared out as train_step's own lines share theirs. In the
    line table, set-up run once (`model = Net()`) is no step's `forward`, while train_step's `model(batch)` is."""
    script = OWN / "step_in_function.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "json")
    assert report.loop.function == "train_epoch", report.loop
    phases = report.phases.set_index("phase")["seconds"]
    call = report.lines[report.lines["source"].str.contains("losses.append(train_step", regex=False)]
    assert len(call) == 1 and phases.sum() == pytest.approx(report.loop.wait_seconds + report.loop.compute_seconds)
    assert phases["other"] < 0.2 * call["seconds"].sum(), phases  # the step itself is no longer `other` ...
    assert min(phases[p] for p in ("forward", "loss", "backward", "optimizer")) > 0, phases  # ... but its phases
    phase_of = report.lines.set_index("source")["phase"].rename(str.strip)
    assert phase_of["model = Net()"] == "other" and phase_of["output = model(batch)"] == "forward", phase_of


def test_workers_sized_by_cpu_count_are_set_by_the_edit_even_where_the_count_stays(tmp_path, repo):
    """`num_workers=min(1, os.cpu_count())` counts the node's cores, not the job's. The edit left it in place where
    the advice kept the run's count (unseen i_4): under Slurm the script would start a worker per core of the node."""
    script = OWN / "cpu_count_workers.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "1", "--formats", "text")
    assert report.facts.by_cpu_count and report.facts.workers_flag is None
    assert workers_given("?") == workers_given(f"{script}:1") == (None, False, None)  # capture's unknown line; no call
    where = f"{script}:{line_of(script, 'loader = DataLoader(')}"
    assert f"{where}  DataLoader(..., num_workers={report.advice.num_workers}" in report.advice.edits[1], report.advice
    assert any("takes num_workers from a CPU count, which gives the advised count only by chance" in note
               for note in report.notes), report.notes  # not "leaves the main process no CPU" (z_2: `// 2`)
    kept = replace(report.advice.numbers, num_workers=1, current_workers=1, workers_known=True)  # the count stays
    assert f"{where}  DataLoader(..., num_workers=1" in script_edits(kept, report.facts)[0]
    assert not any("num_workers" in e for e in script_edits(kept, replace(report.facts, by_cpu_count=False)))


@pytest.mark.parametrize("name, set_at, flag, given", [
    ("dataclass_workers.py", "dataclass_workers.py:12  num_workers: int = 3", None, False),  # unseen j_3
    ("json_workers.py", "json_workers.json:5  \"num_workers\": 3", None, False),  # unseen j_2: its default file
    ("json_workers.py", "other.json:3  \"num_workers\": 3,", None, True),  # the file the run was given instead
    ("two_worker_flags.py", None, "--train-workers", False),  # unseen j_5: not the first flag, the loop's loader's
    ("flag_for_another_loader.py", None, None, False),  # unseen n_5: the only flag feeds another loader
])
def test_the_edit_sets_the_count_where_the_script_takes_it_from(tmp_path, repo, name, set_at, flag, given):
    """A count read from a dataclass default or a config file was overridden on the DataLoader's line, leaving the
    setting the user reads saying 0; of two worker flags, the first declared was named, the validation loader's."""
    script, args = OWN / name, []
    if given:  # `--config=other.json`, relative to the run's directory
        (tmp_path / "other.json").write_text('{"lr": 0.01,\n "loader": {"batch_size": 16,\n  "num_workers": 0,\n'
                                             '  "shuffle": true}}\n')
        args = ["--config=other.json"]
    report = profiled_report(repo, tmp_path, script, "--formats", "text", args=args)
    facts, expressions = report.facts, {"dataclass_workers.py": "cfg.num_workers", "json_workers.py":
                                        "cfg['loader']['num_workers']", "two_worker_flags.py": "args.train_workers",
                                        "flag_for_another_loader.py": None}
    assert facts.workers_flag == flag and facts.workers_given == expressions[name]
    more = replace(report.advice.numbers, num_workers=3, current_workers=0, workers_known=True)
    edits = script_edits(more, facts)
    if name == "flag_for_another_loader.py":  # its flag sets the extraction loader: the probe's line gets the count
        assert edits == [f"{script}:16  DataLoader(..., num_workers=3, persistent_workers=True)"], edits
        assert (facts.other_loader, facts.other_workers) == (f"{script}:13", 1)  # its 1 worker keeps its CPUs:
        assert report.advice.numbers.cpus_per_task >= 2 and "other_loader" in report.advice.fired_rules
        return
    if set_at:  # the line that sets it, with the count changed and nothing else
        folder = tmp_path if given else OWN
        assert edits[0] == (set_at if given else f"{OWN}/{set_at}"), edits  # named as the report names files
        (file, line), edited = set_at.split("  ")[0].split(":"), set_at.split("  ")[1]
        assert (folder / file).read_text().splitlines()[int(line) - 1].strip().replace("0", "3") == edited
    else:
        assert edits[0] == f"{flag} 3"
    assert not any("num_workers=3" in e for e in edits)  # not hard-coded on the DataLoader's line as well
    assert f"persistent_workers={facts.workers_given} > 0" in edits[-1]  # safe if the setting is 0 again


def test_a_count_that_is_one_key_of_a_dicts_line_is_edited_on_that_line(tmp_path):
    """`CONFIG = {"data": {"n": 1000, "workers": 0, "vocab": 500}, ...}`, overridden by `--set data.workers=2` (unseen
    u_5): the count was hard-coded on the DataLoader's line, leaving the config and its override dead."""
    script = tmp_path / "nested.py"
    script.write_text('"""Set `CONFIG = {"data": {"workers": 0, ...}}` with --set data.workers=2."""\nCONFIG = {\n'
                      '    "data": {"n": 1000, "batch_size": 20, "workers": 0, "vocab": 500},\n'
                      '    "optim": {"lr": 3e-3, "workers_note": "none"},\n}\n')  # (its docstring names the key too)
    assert workers_set_at(script, 'cfg["data"]["workers"]', root=str(tmp_path)) == \
        'nested.py:3  "data": {"n": 1000, "batch_size": 20, "workers": {n}, "vocab": 500},'
    script.write_text('A = {"workers": 0}\nB = {"workers": 2}\n')  # two: no one place to edit
    assert workers_set_at(script, 'cfg["workers"]', root=str(tmp_path)) is None


def test_a_count_a_call_passes_is_edited_there_not_at_the_default_it_overrides(tmp_path, repo):
    """`TrainingArguments(..., dataloader_num_workers=0, ...)` in main(), beside the dataclass's default: the edit went
    to the default, which the call overrides, so the next run started 0 workers again (unseen o_4)."""
    script = tmp_path / "dataclass_overridden.py"  # dataclass_workers.py, its Config built with the keyword
    script.write_text((OWN / "dataclass_workers.py").read_text().replace(
        "train(Config())", "train(Config(batch_size=16, num_workers=0, lr=0.01))"))
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "text")
    more = replace(report.advice.numbers, num_workers=3, current_workers=0, workers_known=True)
    edits = script_edits(more, report.facts)
    call = line_of(script, "train(Config(batch_size=16, num_workers=0")
    assert edits[0] == f"{script.name}:{call}  Config(..., num_workers=3)", edits
    assert not any("num_workers: int = 3" in e or "num_workers=3" in e for e in edits[1:]), edits


def test_a_workers_option_of_a_cli_without_argparse_is_the_edit(tmp_path, repo):
    """Fire's `--num_workers=0` sets main()'s keyword, which the DataLoader takes: the edit hard-coded the count on
    the DataLoader's line, leaving the option the job passes dead (unseen o_6). The option the run was given is the
    edit; Hydra's `loader.num_workers=2` the same way."""
    script = OWN / "fire_style.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "text",
                             args=["--num_workers=0"])
    assert report.facts.workers_flag == "--num_workers=", report.facts
    more = replace(report.advice.numbers, num_workers=3, current_workers=0, workers_known=True)
    edits = script_edits(more, report.facts)
    assert edits[0] == "--num_workers=3" and not any("num_workers=3," in e for e in edits), edits
    assert worker_flag(script, ["--epochs", "2", "loader.num_workers=2"]) == "loader.num_workers="
    assert worker_flag(script, ["--epochs", "2"]) is None  # nothing given, nothing declared: the DataLoader's line
    # getopt's `-w/--workers`, run as `-w 0`: its long option is the edit, not a count on the DataLoader (unseen q_1)
    getopt = tmp_path / "getopt_style.py"
    getopt.write_text('import getopt, sys\nopts, _ = getopt.getopt(sys.argv[1:], "w:e:", ["workers=", "epochs="])\n')
    assert worker_flag(getopt, ["-w", "0"]) == worker_flag(getopt, []) == "--workers"
    # a `match` over sys.argv of its own, the count in a dict (unseen r_2): its `--workers` too
    matched = tmp_path / "match_style.py"
    matched.write_text('import sys\nmatch sys.argv[1:]:\n    case ["-w" | "--workers", n]:\n        workers = int(n)\n')
    assert worker_flag(matched, [], "cfg['workers']") == "--workers"


def test_a_count_given_as_the_sixth_argument_is_edited_by_its_option_and_the_edited_script_runs(tmp_path, repo):
    """`DataLoader(data, 8, True, None, None, args.workers)`: the edit added `num_workers=1` beside the sixth argument,
    a TypeError when run (unseen r_5). Its option is the edit, and the script runs with both edits."""
    script = OWN / "positional_loader.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "text")
    assert (report.facts.workers_given, report.facts.workers_flag) == ("args.workers", "--workers"), report.facts
    edits = script_edits(replace(report.advice.numbers, num_workers=2, current_workers=0, workers_known=True),
                         report.facts)
    assert edits[0] == "--workers 2" and not any("num_workers=" in e for e in edits), edits
    assert edits[1].endswith("DataLoader(..., persistent_workers=args.workers > 0)"), edits
    edited = tmp_path / script.name
    edited.write_text(script.read_text().replace("args.workers)", "args.workers, persistent_workers=args.workers > 0)"))
    done = subprocess.run([sys.executable, str(edited), *edits[0].split(), "--epochs", "1"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "workers 2" in done.stdout, done.stderr
    # a number in its place (`DataLoader(data, 8, True, None, None, 0)`) is edited there, not given twice by keyword
    constant = tmp_path / "constant" / script.name
    constant.parent.mkdir()
    constant.write_text(script.read_text().replace("None, None, args.workers)", "None, None, 0)"))
    report = profiled_report(repo, constant.parent, constant, "--try-workers", "off", "--formats", "text")
    edits = script_edits(replace(report.advice.numbers, num_workers=2, current_workers=0, workers_known=True),
                         report.facts)
    at = f"{constant.name}:{line_of(constant, 'loader = DataLoader(')}"  # shown from where it ran
    assert edits == [f"{at}  DataLoader(data, 8, True, None, None, 2, ...)",
                     f"{at}  DataLoader(..., persistent_workers=True)"], edits
    constant.write_text(constant.read_text().replace("None, None, 0)", "None, None, 2, persistent_workers=True)"))
    done = subprocess.run([sys.executable, str(constant), "--epochs", "1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "workers 2" in done.stdout, done.stderr


def test_a_count_set_on_the_loader_after_it_is_built_is_edited_there_and_never_with_persistent_workers(tmp_path, repo):
    """`loader.num_workers = args.workers` after a helper built it with none (unseen u_6): the edit put
    `persistent_workers=True` on the helper's `num_workers=0` line, a ValueError when run. The count's own source is
    the edit (its option, or the assignment's line), and no persistent_workers edit is given."""
    script = OWN / "workers_set_after.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "text")
    edits = script_edits(replace(report.advice.numbers, num_workers=2, current_workers=1, workers_known=True),
                         report.facts)
    assert edits == ["--workers 2"], edits
    done = subprocess.run([sys.executable, str(script), "--workers", "2", "--epochs", "1"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "workers 2" in done.stdout, done.stderr
    constant = tmp_path / "constant" / script.name  # a number there: that line is the edit
    constant.parent.mkdir()
    constant.write_text(script.read_text().replace("num_workers = args.workers", "num_workers = 1"))
    report = profiled_report(repo, constant.parent, constant, "--try-workers", "off", "--formats", "text")
    edits = script_edits(replace(report.advice.numbers, num_workers=2, current_workers=1, workers_known=True),
                         report.facts)
    assert edits == [f"{constant.name}:{line_of(constant, 'loader.num_workers = 1')}  loader.num_workers = 2"], edits


def test_an_advised_count_outside_the_options_choices_is_noted_with_where_to_widen_them(tmp_path, repo, monkeypatch):
    """`--workers` with `choices=range(0, 9)` (unseen s_6): argparse refuses `--workers 15`, which a 16-CPU job would
    be told. The choices are read (a range or a list of numbers) and a count outside them is noted first."""
    script = tmp_path / "choices" / "positional_loader.py"
    script.parent.mkdir()
    script.write_text((OWN / "positional_loader.py").read_text().replace("default=0)", "default=0, choices=range(3))"))
    at = f"{script}:{line_of(script, 'choices=range')}"
    assert flag_choices(script, "--workers") == (at, [0, 1, 2]) and flag_choices(script, "--epochs") is None
    listed = tmp_path / "listed.py"
    listed.write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('-j', '--workers', type=int, "
                      "choices=[0, 4, 1])\np.add_argument('--nw', choices=CHOICES)\n")
    assert flag_choices(listed, "fit ... --workers") == (f"{listed}:3", [0, 1, 4])
    assert flag_choices(listed, "--nw") is None  # a name: not read
    lprof = profiled_report(repo, script.parent, script, "--try-workers", "off", "--formats", "text").lprof_path
    real = report_module.advise
    monkeypatch.setattr(report_module, "advise", lambda *a, **k: replace(real(*a, **k), num_workers=15))
    notes = build_report(lprof).notes
    assert notes[0] == f"--workers takes 0-2 only (its choices, {at.replace(str(script.parent) + '/', '')}): widen " \
                       "them to give it 15", notes
    script.write_text(script.read_text().replace("choices=range(3)", "choices=[0, 1, 2, 4]"))  # not a span: listed
    assert build_report(lprof).notes[0].startswith("--workers takes 0, 1, 2, 4 only (its choices, "), notes


@pytest.mark.parametrize("name, before, edit, applied", [
    ("partial_in_dict.py", 'FACTORIES["train"](TensorDataset', 'FACTORIES["train"](..., num_workers=2, '  # s_1
     "persistent_workers=True)", 'FACTORIES["train"](num_workers=2, dataset=TensorDataset'),
    ("workers_parameter.py", "num_workers: int = 0)", "def train(..., num_workers=2, ...)",  # unseen s_4
     "num_workers: int = 2)"),
])
def test_the_edit_names_what_the_line_calls_or_the_parameter_that_sets_the_count_and_the_edited_script_runs(
        tmp_path, repo, name, before, edit, applied):
    """A partial kept in a dict, `FACTORIES["train"](ds)`: the edit read `DataLoader(..., num_workers=1)` on a line
    that calls no DataLoader (unseen s_1). A count that is a parameter's default, `def train(..., num_workers: int =
    0)`, was hard-coded on the DataLoader's line, leaving the parameter (and a CLI built from it) dead (s_4)."""
    script = OWN / name
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "text")
    edits = script_edits(replace(report.advice.numbers, num_workers=2, current_workers=0, workers_known=True),
                         report.facts)
    assert edits[0] == f"{script}:{line_of(script, before)}  {edit}", edits
    edited = tmp_path / name  # the edit applied by hand, as a user would
    edited.write_text(script.read_text().replace(before, applied))
    done = subprocess.run([sys.executable, str(edited)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "workers 2" in done.stdout, done.stderr


def test_a_module_constant_given_to_the_dataloader_is_edited_where_it_is_set(tmp_path):
    """`num_workers=NUM_WORKERS`: the constant's line is the edit, as a config's would be, not the DataLoader's."""
    script = tmp_path / "constant.py"
    script.write_text("from torch.utils.data import DataLoader\nNUM_WORKERS = 4\n\n\ndef main():\n"
                      "    return DataLoader(range(8), num_workers=NUM_WORKERS)\n")
    assert workers_given("constant.py:6", str(tmp_path))[0] == "NUM_WORKERS"
    assert workers_set_at(script, "NUM_WORKERS", [], str(tmp_path)) == "constant.py:2  NUM_WORKERS = {n}"


def test_a_class_that_yields_its_loaders_batches_on_is_not_the_loop_and_its_wrapped_option_is_the_edit(tmp_path,
                                                                                                        repo):
    """CycleGAN's dataset class iterates its DataLoader in a generator, `yield data`: that loop was taken for the
    training loop, computing 0.004 ms a batch (a generator waiting at `yield` is not timed) and waiting "100 %"; and
    the option behind `num_workers=int(opt.num_threads)` was not found, so the edit left `--num_threads` dead (r_1)."""
    report = profiled_report(repo, tmp_path, OWN / "wrapped_loader.py", "--try-workers", "off", "--formats", "text")
    assert report.loop is not None and report.loop.function == "", report.loop  # timed through its DataLoader
    assert report.loop.compute_per_batch > 0.005 and report.loop.wait_fraction < 0.5, report.loop  # its 6 ms step
    assert report.facts.workers_flag == "--num_threads", report.facts


def test_a_count_read_from_slurm_in_the_script_is_set_by_the_sbatch_line_not_on_the_loader_of_its_module(tmp_path,
                                                                                                          repo):
    """Unseen q_2: `NUM_WORKERS = SLURM_CPUS_PER_TASK - 1` in the script, its DataLoader built by a module of its own
    beside it. The edit hard-coded a count on the module's line, named by its absolute path: the training loader then
    kept that count while the job's CPUs changed. The #SBATCH line is the edit, a note says why, and the module's line
    is named from where the run started, as the script is."""
    for name in ("slurm_count.py", "slurm_count_data.py"):
        shutil.copy(OWN / name, tmp_path / name)
    done = dlprof(repo, "run", "--try-workers", "off", "--curve-seconds", "0", "--formats", "text", "--output-dir",
                  "out", "--", "slurm_count.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = build_report(tmp_path / "out" / "slurm_count.lprof")
    assert report.facts.workers_from_slurm == "slurm_count.py:10", report.facts
    assert report.facts.loader_at == "slurm_count_data.py:8", report.facts
    more = replace(report.advice.numbers, num_workers=3, current_workers=1, workers_known=True)
    assert not any("num_workers=3" in e for e in script_edits(more, report.facts)), script_edits(more, report.facts)
    assert any("slurm_count.py:10 sets the worker count from SLURM_CPUS_PER_TASK" in n for n in report.notes)
    assert str(tmp_path) not in done.stdout, done.stdout  # every file named as the script is


EPOCH_TOLD = """import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.epoch = 0

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((3,), float(self.epoch)), torch.zeros(1)


if __name__ == "__main__":
    loader = DataLoader(Noisy(), batch_size=16, num_workers=1)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        loader.dataset.epoch = epoch
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
"""


def test_a_dataset_told_its_epoch_is_not_given_persistent_workers(tmp_path, repo):
    """`loader.dataset.epoch = epoch` in the main process: fresh workers each epoch fork the new epoch, persistent ones
    keep epoch 0's copy. The edit and a note added persistent_workers=True anyway, and the losses moved (unseen p_1,
    p_5). A sampler's set_epoch runs in the main process and is no reason."""
    script = tmp_path / "epoch_told.py"
    script.write_text(EPOCH_TOLD)
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "text")
    told = f"{script.name}:{line_of(script, 'loader.dataset.epoch = epoch')}"
    assert report.facts.epoch_told is not None and report.facts.epoch_told.endswith(told), report.facts
    more = replace(report.advice.numbers, num_workers=2, current_workers=1, workers_known=True)
    assert not any("persistent_workers" in e for e in script_edits(more, report.facts)), report.facts
    assert "persistent_workers" not in report.advice.fired_rules
    assert any(note.startswith("persistent_workers is not advised") for note in report.notes), report.notes
    (tmp_path / "sampler.py").write_text("for epoch in range(3):\n    train_sampler.set_epoch(epoch)\n"
                                         "    train_set.set_epoch(epoch)\n")
    assert epoch_told("sampler.py:1", str(tmp_path)) == "sampler.py:3"  # the dataset's, not the sampler's
    (tmp_path / "sampler.py").write_text("for epoch in range(3):\n    loader.sampler.set_epoch(epoch)\n")
    assert epoch_told("sampler.py:1", str(tmp_path)) is None


def test_one_iterator_over_every_epoch_is_traced_for_one_epoch_then_timed_untraced(tmp_path, repo):
    """timm's MultiEpochsDataLoader makes one iterator for the whole run, so no second epoch's iterator stopped the
    tracing: all 6 epochs were traced and the report said "too short" (unseen o_2). Tracing now stops after an epoch's
    steps; the rest is timed untraced, and a loop that waited little is compute-bound on that timing."""
    script = OWN / "repeating_loader.py"
    done = dlprof(repo, "run", "--formats", "json", "--curve-seconds", "0", "--output-dir", str(tmp_path), "--",
                  str(script), cwd=tmp_path)
    assert done.returncode == 0 and all(f"epoch {e} 16 batches" in done.stdout for e in range(4)), done.stdout
    trials = json.loads((tmp_path / "repeating_loader.loaders.json").read_text())["trials"]
    assert trials["traced_batches"] == 16 and trials["untraced"]["steps"] >= 40, trials  # 64 batches in all
    report = build_report(tmp_path / "repeating_loader.lprof")
    assert report.loop.batches == 16, report.loop  # the lines' hits stop with the tracing
    assert trials["status"] == "compute-bound" and report.advice.numbers.basis == "kept", trials["status"]


def test_a_loop_over_kept_batches_says_why_nothing_was_tried(tmp_path, repo):
    """`itertools.cycle(loader)` asks the loader for one epoch and replays it: the report said "too short to try",
    which no longer run could change, and "the first 8 batches traced" of 40 traced steps (unseen o_5)."""
    script = OWN / "cycled_loader.py"
    report = profiled_report(repo, tmp_path, script, "--curve-seconds", "0", "--formats", "text")
    head = (tmp_path / "cycled_loader.report.txt").read_text()
    assert report.loop.batches == 40 and "40 batches (all traced; 8 came from its DataLoader)" in head, head
    assert "worker counts not tried: the loop stepped 40 times on 8 batches" in report.advice.numbers.fallback
    # an estimate then names a sweep, not "profile two epochs or more", which no longer run could change (p_5)
    assert "estimate_untriable" in report.advice.fired_rules and "estimate" not in report.advice.fired_rules
    assert any("profiling sweep" in why for why in report.advice.briefs), report.advice.briefs


def test_a_loop_that_calls_its_step_as_a_closure_is_found_where_the_hook_saw_its_loader(tmp_path, repo):
    """`for batch in data: self.process_function(self, batch)` (ignite's Engine, unseen n_2): no loader name and no
    backward in the loop, so no loop was found and the phases covered every profiled line (82.8 % `other`, no data
    wait, under a header that said 34.5 % waited). The line where the hook saw the training loader iterated counts."""
    script = OWN / "closure_engine.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "json")
    assert (report.loop.function, report.loop.header_line) == ("Engine.run", line_of(script, "for batch in data:"))
    assert report.phases.set_index("phase")["seconds"]["data_wait"] > 0, report.phases


def test_a_validation_pass_the_loop_calls_is_no_part_of_its_data_wait(tmp_path, repo):
    """`validate(model, val_loader)` every few steps: its own loader's wait was shared into the training loop's
    data_wait (unseen j_5: 20.7 % in the table, 6.3 % in the headline). A function with a loader loop of its own
    is not a step's part: the call stays `other`."""
    script = OWN / "val_in_function.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "json")
    assert report.loop.function == "train", report.loop
    phases = report.phases.set_index("phase")["seconds"]
    seconds = report.lines.set_index(report.lines["source"].str.strip())["seconds"]
    val_wait, call = seconds["for x, y in loader:"], seconds["val = validate(model, val_loader)"]
    assert val_wait > 0.2 and phases["data_wait"] < 0.5 * val_wait, (phases, val_wait)  # 12 passes of 2 x 16 ms
    assert phases["other"] >= 0.9 * call, (phases, call)


def test_a_loss_method_that_runs_the_model_shows_in_the_forward_phase_too(tmp_path, repo):
    """`loss = self.compute_loss(batch)` is named for a loss, but its own lines run the model first: the phase table
    filed the whole call under `loss` and showed no forward pass (unseen h_1). It is shared out as its lines are."""
    script = OWN / "loss_in_method.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "json")
    assert report.loop.function == "Trainer.fit", report.loop
    phase_of = report.lines.set_index("source")["phase"].rename(str.strip)
    assert phase_of["loss = self.compute_loss(batch)"] == "loss", phase_of  # the line itself, by its name
    phases = report.phases.set_index("phase")["seconds"]
    assert phases.sum() == pytest.approx(report.loop.wait_seconds + report.loop.compute_seconds)
    lines = report.lines.set_index("source")["seconds"].rename(str.strip)
    assert phases["forward"] > 0.3 * lines["loss = self.compute_loss(batch)"], phases  # the model's share of it
    assert phases["loss"] > 0, phases


def test_the_edit_for_a_loader_given_a_kwargs_dict_updates_the_dict_and_runs(tmp_path, repo):
    """`DataLoader(ds, **train_kwargs)` (pytorch/examples' style, unseen j_1) got `DataLoader(..., persistent_workers=
    True)`: with --workers 0 that is a ValueError, and a `num_workers=` keyword beside a dict holding one is a
    TypeError. The edit updates the dict before the line; here each edit is made and the script run with it."""
    script = OWN / "kwargs_dict.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "off", "--formats", "json")
    facts = report.facts
    assert facts.loader_kwargs == "train_kwargs" and facts.workers_flag == "--workers"
    assert facts.workers_given == "train_kwargs.get('num_workers', 0)"
    more = replace(report.advice.numbers, num_workers=2, current_workers=0, workers_known=True)
    line = line_of(script, "DataLoader(make_data")
    for flag, runs in (("--workers", {"0": "0 worker(s), persistent False", "2": "2 worker(s), persistent True"}),
                       (None, {"0": "2 worker(s), persistent True"})):  # no flag: the edit sets the count itself
        edits = script_edits(more, replace(facts, workers_flag=flag))
        assert len(edits) == 1 + bool(flag) and (edits[0] == "--workers 2") == bool(flag), edits
        before = f"{script}:{line}  before this line: "
        update = edits[-1].removeprefix(before)
        assert edits[-1].startswith(before) and update.startswith("train_kwargs.update("), edits
        assert ("num_workers=2" in update) == (flag is None)
        source = script.read_text().splitlines()
        source.insert(line - 1, " " * 4 + update)  # the edit, made as a user would
        edited = tmp_path / f"edited_{flag is not None}.py"
        edited.write_text("\n".join(source) + "\n")
        for workers, says in runs.items():
            ran = subprocess.run([sys.executable, str(edited), "--workers", workers], capture_output=True, text=True,
                                 timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
            assert ran.returncode == 0 and says in ran.stdout, (update, ran.stderr[-500:])
    spread = tmp_path / "spread.py"  # unseen g_5: an item of a config, beside a dataset's own spread dict
    spread.write_text('loader = DataLoader(Signals(**cfg["data"]), **cfg["loader"])\n'
                      "other = DataLoader(ds, num_workers=2, **kw)\n"  # a keyword the edit would add: on the call
                      'third = DataLoader(Signals(**cfg["data"]), batch_size=4)\n')  # the dataset's dict: not it
    assert workers_given(f"{spread}:1") == ("cfg['loader'].get('num_workers', 0)", False, "cfg['loader']")
    assert workers_given(f"{spread}:2") == workers_given(f"{spread}:3") == (None, False, None)
