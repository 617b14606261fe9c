"""Styles met in scripts the kit had never seen (docs/results/unseen-styles-cpu, batches k and l), each as a fixture in
tests/data/own_scripts/ and a real `run`: a count read by hand, a count from the CPU mask, the one count a job's
CPUs hold, a DataLoader without automatic batching, and passes over loaders around the training loop."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path


import pytest

from profiling.advice import script_edits
from profiling.loader_curve import spec_of
from profiling.precheck import workers_given
from profiling.report import build_report
from tests.test_own_scripts import OWN, dlprof, line_of, profiled_report

QUICK = ("--trace-batches", "16", "--segment-seconds", "0.2", "--formats", "json")


def plain(script: Path, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    return done.stdout.splitlines()


def profiled(repo: Path, tmp_path: Path, script: Path, *flags: str) -> tuple[dict, list[str]]:
    """`run` the fixture; its trials record and the epoch lines it printed."""
    done = dlprof(repo, "run", *flags, "--output-dir", str(tmp_path), "--", str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    trials = json.loads((tmp_path / f"{script.stem}.loaders.json").read_text())["trials"]
    return trials, [line for line in done.stdout.splitlines() if line.startswith("epoch ")]


def test_the_one_count_a_job_holds_is_timed_in_the_scripts_own_loader_not_restarted(tmp_path, repo):
    """Where only the run's own count is tried (a 2-CPU job holds 1 worker), turns restarted its workers anyway: each
    start was added to its "measured" step (unseen k_1: 192 ms a step against 134 over the untraced part) and,
    torch seeding numpy anew in every new worker, the losses moved away from a plain run's. Now the untraced part is
    its measurement: no turn, no start, and the plain run's losses."""
    script = OWN / "workers_by_hand.py"
    trials, epochs = profiled(repo, tmp_path, script, "--try-workers", "1", *QUICK)
    assert epochs == [line for line in plain(script) if line.startswith("epoch ")] and len(epochs) == 3, epochs
    assert trials["status"] in ("tried", "compute-bound") and trials["starts"] == 0, trials
    assert list(trials["settings"]) == ["1"] and trials["settings"]["1"] == trials["untraced"]
    assert trials["segments"] == [[1, trials["untraced"]["steps"], trials["untraced"]["seconds"]]]


def test_the_persistent_edit_keeps_a_count_read_by_hand_and_runs_at_zero_workers(tmp_path, repo):
    """`num_workers=cfg["workers"]` from a hand-parsed argv (unseen k_5), or a module global (k_6): the edit read
    `persistent_workers=True`, and `--workers=0` then stops the script (ValueError). It keeps the user's count now;
    the edit is made here as a user would and the script run with 0 and 2 workers."""
    script = OWN / "workers_by_hand.py"
    report = profiled_report(repo, tmp_path, script, "--try-workers", "1", *QUICK)
    line = line_of(script, "loader = DataLoader(")
    edit = f"{script}:{line}  DataLoader(..., persistent_workers=cfg['workers'] > 0)"
    assert report.advice.num_workers == 1 and report.advice.edits[1:] == [edit], report.advice.edits
    kept = replace(report.advice.numbers, num_workers=1, current_workers=1, workers_known=True)
    by_global = replace(report.facts, workers_given="num_workers")  # `num_workers = 1` at module level (k_6)
    assert "persistent_workers=num_workers > 0" in script_edits(kept, by_global)[0]
    more = replace(kept, num_workers=2)  # a new count where the dict of defaults sets it (the key on a line of three)
    assert script_edits(more, report.facts) == [
        f'{script}:{line_of(script, "DEFAULTS = ")}  DEFAULTS = {{"workers": 2, "epochs": 3, "samples": 768}}', edit]
    source = script.read_text().replace('num_workers=cfg["workers"])', 'num_workers=cfg["workers"], '
                                        + edit.rpartition("..., ")[2])
    edited = tmp_path / "edited.py"
    edited.write_text(source)
    assert source != script.read_text()
    for workers, persistent in (("0", False), ("2", True)):
        assert f"{workers} worker(s), persistent {persistent}" in plain(edited, f"--workers={workers}")


def test_a_count_from_the_cpu_mask_is_set_by_the_edit(tmp_path):
    """`min(8, len(os.sched_getaffinity(0)))` is the job's CPUs, the main process's among them: a 3-CPU job advised
    2 workers would start 3 (unseen k_2). It counts as cpu_count() does now, so the edit sets the count itself."""
    script = tmp_path / "mask.py"
    script.write_text("n = min(8, len(os.sched_getaffinity(0)))\nloader = DataLoader(ds, num_workers=n)\n"
                      "other = DataLoader(ds, num_workers=len(os.sched_getaffinity(0)) - 1)\n"
                      "third = DataLoader(ds, num_workers=args.workers)\n")
    assert workers_given(f"{script}:2") == ("n", True, None)
    assert workers_given(f"{script}:3") == ("len(os.sched_getaffinity(0)) - 1", True, None)
    assert workers_given(f"{script}:4") == ("args.workers", False, None)


def test_a_loader_without_automatic_batching_is_tried_and_trains_as_plain(tmp_path, repo):
    """`DataLoader(ds, sampler=BatchSampler(...), batch_size=None)`: each item its sampler yields is a batch, so the
    worker count changes no data, yet nothing was tried (unseen k_4), and the fallback curve rebuilt it with
    batch_size=1 and a sequential sampler (TypeError in the user's __getitem__). Counts are tried in it now, each epoch
    keeps its batches and losses, and a rebuilt loader yields the script's batches."""
    script = OWN / "batched_fetch.py"
    trials, epochs = profiled(repo, tmp_path, script, "--try-workers", "0,1", *QUICK)
    assert epochs == plain(script) and len(epochs) == 3 and all("128 batches" in e for e in epochs), epochs
    assert trials["status"] == "tried" and set(trials["settings"]) == {"0", "1"}, trials
    import torch
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

    data = TensorDataset(torch.arange(40.0))
    loader = DataLoader(data, sampler=BatchSampler(SequentialSampler(data), 8, drop_last=False), batch_size=None)
    rebuilt = spec_of(loader).build(0)
    assert [b[0].tolist() for b in rebuilt] == [b[0].tolist() for b in loader] and len(list(rebuilt)) == 5


def test_where_the_cpus_cap_an_estimate_the_why_lines_say_so_not_how_many_workers_it_needs():
    """A 2-CPU job whose loop waited 81 % (unseen k_4, estimated): the terminal's three "Why" lines read "one worker
    needs about 17.83 ms a batch; the loop takes one every 3.43 ms" above an advice of 1 worker, and the line saying
    2 CPUs cap the count came fourth, off the terminal. The cap's line now stands in for the need's."""
    from profiling.records import JobFacts, LoopSummary
    from profiling.advice import advise

    loop = LoopSummary("train.py", "train", 57, 100, 100 * 0.01440, 100 * 0.00343, 1)
    advice = advise(loop, JobFacts(cpus=2, gpus=0, num_workers=1))
    assert advice.num_workers == 1 and {"capped_by_cpus", "workers_from_starved_loop"} <= set(advice.fired_rules)
    why = advice.briefs[:3]
    assert any("CPUs hold: the loader stays the bottleneck" in line for line in why), why
    assert not any("One worker needs" in line for line in advice.briefs), advice.briefs
    assert any("one worker needs about" in reason for reason in advice.reasons)  # the Markdown, HTML and JSON keep it


def test_passes_around_the_loop_are_not_the_loop_and_a_told_dataset_is_never_stale(tmp_path, repo):
    """Unseen batch l: a statistics pass over a loader that keeps its order was taken for the training loader (l_3:
    nothing tried, all traced); a first pass cut short elsewhere, a peek or an LR finder, for the loop (l_4); an
    accuracy pass over the training loader without gradients was timed as training steps (l_1); and the tried counts'
    workers, kept alive over epochs, fed a dataset told its epoch items of an older one (l_2), whose DataLoader says
    persistent_workers=False: the report asked to add it."""
    script = OWN / "passes_around_training.py"
    trials, printed = profiled(repo, tmp_path, script, "--try-workers", "0,1", "--trace-batches", "100",
                               "--segment-seconds", "1")  # the first epoch traced whole, the accuracy pass after it
    report = build_report(tmp_path / f"{script.stem}.lprof")
    assert trials["loader"]["iterated_at"] == f"{script}:{line_of(script, 'for x, y, told in loader:')}", trials
    assert printed == [line for line in plain(script) if line.startswith("epoch ")] and len(printed) == 4, printed
    assert all(": 64 batches, 0 stale items," in line for line in printed), printed
    assert trials["status"] == "tried" and set(trials["settings"]) == {"0", "1"}, trials
    assert trials["traced_batches"] == 64 and trials["untraced"]["steps"] <= 3 * 64, trials  # training steps only
    assert (report.loop.function, report.loop.header_line) == ("train", line_of(script, "for x, y, told in loader:"))
    more = replace(report.advice.numbers, num_workers=1, current_workers=1, workers_known=True)
    assert report.facts.persistent_workers is False, report.facts  # said so: no note, no edit adds it
    assert not any("persistent" in edit for edit in script_edits(more, report.facts))
    assert "persistent_workers" not in report.advice.fired_rules, report.advice.fired_rules


@pytest.mark.parametrize("flags", [[], ["--outer-no-grad", "--no-val"]], ids=["validation-first", "outer-no-grad"])
def test_a_warm_up_run_a_validation_first_and_an_outer_no_grad_leave_the_training_loop_tried(tmp_path, repo, flags):
    """Unseen batch m: `main()` run twice, a few warm-up steps first, kept the warm-up's loader as the training loader
    (m_2: the real run traced throughout, nothing tried); a validation pass before training, with a Sampler of the
    script's own that shuffles, kept the validation loader (m_4); and epochs under an outer `no_grad`, each step turning
    gradients on, were taken for a pass to leave alone (m_1). The edit sets `--nw`, the flag the count comes from."""
    script = OWN / "warmup_then_train.py"
    done = dlprof(repo, "run", "--try-workers", "0,1", *QUICK[:2], "--segment-seconds", "1", "--output-dir",
                  str(tmp_path), "--", str(script), *flags, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = [line for line in done.stdout.splitlines() if line.startswith("epoch ")]
    assert printed == [line for line in plain(script, *flags) if line.startswith("epoch ")] and len(printed) == 5
    record = json.loads((tmp_path / f"{script.stem}.loaders.json").read_text())
    trials, loop = record["trials"], f"{script}:{line_of(script, 'for x, y in loader:')}"
    real = [e for e in record["loaders"] if e["iterated_at"] == loop]
    assert len(real) == 2 and real[1]["epochs"] == 4 and trials["loader"]["iterated_at"] == loop, record["loaders"]
    assert trials["status"] == "tried" and set(trials["settings"]) == {"0", "1"} and trials["traced_batches"] == 16
    report = build_report(tmp_path / f"{script.stem}.lprof")
    assert report.advice.edits[1].startswith("--nw "), report.advice.edits


def test_a_teachers_whole_epoch_before_the_students_loop_is_not_the_training_loop(tmp_path, repo):
    """Unseen x_2: one DataLoader, a teacher fitted for an epoch at one line, then a student for more at another. The
    report named the teacher's loop (its epoch was the one traced) while the untraced timing and the trials ran in the
    student's, and called them "the same loop". The student's first epoch is traced now; its loop is the report's."""
    script = OWN / "teacher_then_student.py"
    trials, printed = profiled(repo, tmp_path, script, "--try-workers", "0,1", "--segment-seconds", "0.2")
    student = f"{script}:{line_of(script, '        for x, y in loader:')}"  # the student's, inside its epochs
    assert trials["loader"]["iterated_at"] == student and trials["traced_batches"] == 12, trials
    assert printed == [line for line in plain(script) if line.startswith("epoch ")] and len(printed) == 4, printed
    report = build_report(tmp_path / f"{script.stem}.lprof")
    assert (report.loop.function, report.loop.batches) == ("train_student", 12), report.loop


def test_a_loop_and_its_step_on_one_line_part_the_wait_from_the_step(tmp_path, repo):
    """`for b in self.dl: self.one_batch(b)` times the wait and the step as one line: unseen ad_4's table read 100 %
    data wait and 0 ms of compute. The hook's traced wait is the wait now, and the rest is the step's phases."""
    script = OWN / "one_line_loop.py"
    report = profiled_report(repo, tmp_path, script, *QUICK)
    line = line_of(script, "for b in self.dl:")
    rows = report.lines[report.lines["line"] == line]
    assert sorted(rows["phase"]) == ["data_wait", "other"], rows
    traced = json.loads((tmp_path / "one_line_loop.loaders.json").read_text())["trials"]["traced"]
    wait = float(rows.loc[rows["phase"] == "data_wait", "seconds"].iloc[0])
    assert wait == pytest.approx(min(traced["wait_seconds"], rows["seconds"].sum()))
    assert report.loop.wait_seconds == pytest.approx(wait) and report.loop.compute_seconds > 0, report.loop
    phases = dict(zip(report.phases["phase"], report.phases["seconds"]))
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0, phases
    assert phases["data_wait"] == pytest.approx(wait), phases
    assert any(f"shares line one_line_loop.py:{line}" in note for note in report.notes), report.notes


@pytest.mark.parametrize("own", [["0"], ["2"], ["0", "--split"]], ids=["own-0", "own-2", "own-0-random-split"])
def test_a_file_opened_lazily_in_the_main_process_is_not_shared_with_forked_workers(tmp_path, repo, own):
    """A dataset that opens its file at the first read (tar, SQLite, HDF5) opened it in the main process during a 0
    worker turn, or the script's own 0-worker epochs, and every worker forked after shared that one handle: unseen
    ad_3's tar read garbage at 2 workers, and the report blamed the script ("its workers failed"). Where the script's
    own count has workers, its own training broke. Workers now fork the dataset as a plain run at their count would."""
    script = OWN / "lazy_file.py"
    done = dlprof(repo, "run", "--try-workers", "0,2", *QUICK, "--output-dir", str(tmp_path), "--", str(script),
                  "--workers", *own, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    trials = json.loads((tmp_path / "lazy_file.loaders.json").read_text())["trials"]
    epochs = [line for line in done.stdout.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 5 and all("32 batches" in line for line in epochs), epochs
    assert trials["refused"] == {} and {"0", "2"} <= set(trials["settings"]), trials


def test_the_cpus_held_for_a_turn_add_no_warning_from_torch_to_the_scripts_output(tmp_path, repo):
    """Each count's turn holds the process to the CPUs a job with that count would ask for, and torch warned of any
    loader iterated meanwhile with more workers than those ("suggested max number of worker in current system is 1":
    unseen ad_4), a warning a plain run never printed. On 2 CPUs the validation loader's 2 workers fit a plain run."""
    script = OWN / "val_loader_workers.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"OMP_NUM_THREADS": "1"}
    cpus = "0,1"  # the plain run and the profiled one on the same two CPUs, whatever the machine has
    plain_run = subprocess.run(["taskset", "-c", cpus, sys.executable, str(script)], env=env, capture_output=True,
                               text=True, timeout=120)
    assert plain_run.returncode == 0 and "This DataLoader will create" not in plain_run.stderr, plain_run.stderr
    done = subprocess.run(["taskset", "-c", cpus, sys.executable, "-m", "profiling", "run", "--try-workers", "0,1",
                           *QUICK, "--output-dir", str(tmp_path), "--", str(script)], cwd=tmp_path,
                          env=env | {"PYTHONPATH": str(repo)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and len([line for line in done.stdout.splitlines() if line.startswith("epoch ")]) == 5
    trials = json.loads((tmp_path / "val_loader_workers.loaders.json").read_text())["trials"]
    assert "0" in trials["settings"], trials  # a turn held to 1 CPU ran, with the validation loader between epochs
    assert "This DataLoader will create" not in done.stderr, done.stderr[-1500:]
