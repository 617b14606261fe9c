"""profiling.capture: the DataLoaders a script really iterates, recorded from inside its process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from profiling.capture import (BATCHES_VAR, FEW_STEPS, PATH_VAR, WORKERS_VAR, batches_per_second, loader_for_loop,
                               loop_step, read_loaders)
from profiling.facts import Environment, job_facts

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "data" / "own_scripts" / "workers_in_code.py"
HELD = REPO / "tests" / "data" / "own_scripts" / "held_steps.py"


def _captured(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "loaders.json"
    environ = {**os.environ, "PYTHONPATH": str(REPO), PATH_VAR: str(out), **env}
    done = subprocess.run([sys.executable, "-m", "profiling.capture", str(SCRIPT)], env=environ,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return done, json.loads(out.read_text())


def test_records_the_loader_the_script_built(tmp_path):
    done, record = _captured(tmp_path)
    assert done.returncode == 0, done.stderr
    [loader] = record["loaders"]
    assert loader["built_at"].endswith("workers_in_code.py:9")      # the DataLoader(...) line
    assert loader["iterated_at"].endswith("workers_in_code.py:13")  # the `for x, y in loader` line
    assert (loader["num_workers"], loader["batch_size"], loader["persistent_workers"]) == (2, 32, True)
    assert (loader["pin_memory"], loader["prefetch_factor"], loader["dataset_length"]) == (False, 2, 256)
    assert (loader["epochs"], loader["batches"]) == (2, 16)
    assert record["stopped_after"] is None and batches_per_second(loader) > 0


def test_sets_the_workers_and_stops_cleanly(tmp_path):
    done, record = _captured(tmp_path, **{WORKERS_VAR: "0", BATCHES_VAR: "3"})
    assert done.returncode == 0, done.stderr
    assert "epoch 0" not in done.stdout  # stopped inside the first epoch
    [loader] = record["loaders"]
    assert (loader["num_workers"], loader["persistent_workers"], loader["batches"]) == (0, False, 3)
    assert record["stopped_after"] == 3


def test_the_loop_gets_its_own_loader_and_the_facts_use_it(tmp_path):
    train = {"built_at": "t.py:5", "iterated_at": "t.py:20", "num_workers": 3, "batches": 10,
             "pin_memory": True, "persistent_workers": False}
    val = {"built_at": "t.py:6", "iterated_at": "t.py:30", "num_workers": 0, "batches": 50}
    assert loader_for_loop([train, val], "/abs/t.py", 20) is train
    assert loader_for_loop([train, val], "t.py", 99) is val   # no match: the busiest loader
    assert loader_for_loop([]) is None
    # one loop line for both (a run_epoch(loader) helper): the one the trials timed, else the first
    shared = {**val, "iterated_at": "t.py:20"}
    assert loader_for_loop([shared, train], "t.py", 20) is shared
    assert loader_for_loop([shared, train], "t.py", 20, {"built_at": "t.py:5", "iterated_at": "t.py:20"}) is train
    facts = job_facts(cpus=4, gpus=1, environment=Environment(), loader=train, meta={"num_workers": 1})
    assert (facts.num_workers, facts.pin_memory, facts.persistent_workers) == (3, True, None)  # off, not said off
    assert facts.loader_at == "t.py:5"
    assert "the script's DataLoader (t.py:5)" in facts.source
    assert job_facts(cpus=4, num_workers=5, environment=Environment(), loader=train).num_workers == 5
    (tmp_path / "bad.json").write_text("{not json")
    assert read_loaders(tmp_path / "bad.json") == [] and read_loaders(tmp_path / "missing.json") == []


@pytest.mark.parametrize("workers", [0, 1], ids=["no workers", "one persistent worker"])
def test_times_the_loops_own_step_leaving_out_epoch_starts_and_the_time_between(tmp_path, workers):
    """Each step holds its batch 20 ms; 0.3 s pass between the two epochs of 8 batches. The hook times
    7 steps per epoch (the first batch, the workers starting, is left out), and with persistent
    workers the reused iterator starts each epoch afresh too, so the 0.3 s never counts."""
    out = tmp_path / "loaders.json"
    environ = {**os.environ, "PYTHONPATH": str(REPO), PATH_VAR: str(out)}
    done = subprocess.run([sys.executable, "-m", "profiling.capture", str(HELD), "--workers", str(workers)],
                          env=environ, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [loader] = json.loads(out.read_text())["loaders"]
    assert (loader["epochs"], loader["batches"], loader["loop_steps"]) == (2, 16, 14)
    span = loader["last_batch_s"] - loader["first_batch_s"]  # first to last batch, the 0.3 s included
    assert loader["loop_seconds"] <= span - 0.3
    assert 0 <= loader["loop_wait_seconds"] < loader["loop_seconds"]
    assert loop_step(loader).compute_s >= 0.02  # a step holds at least its sleep
    assert loop_step({**loader, "loop_steps": FEW_STEPS - 1}) is None


def test_the_loops_step_is_its_compute_and_wait_per_timed_step():
    """20 timed steps, 0.72 s in all, 0.02 s of it waiting: 35 ms of compute and 1 ms of wait a step."""
    entry = {"loop_steps": 20, "loop_seconds": 0.7 + 0.02, "loop_wait_seconds": 0.02}
    assert loop_step(entry) == pytest.approx((0.035, 0.001, 20))
    assert loop_step({**entry, "loop_wait_seconds": 0.72}) is None  # all wait: no compute to pace by


CTRL_C_IN_A_FORK_HOOK = """
import os, signal, torch
from torch.utils.data import DataLoader
sent = []
def ctrl_c_after_the_fork():  # where a busy machine's Ctrl-C once landed: inside a fork hook
    if not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
os.register_at_fork(after_in_parent=ctrl_c_after_the_fork)
loader = DataLoader(torch.arange(64.0), batch_size=8, num_workers=1)
for epoch in range(5):
    for batch in loader:
        pass
    print(f"epoch {epoch} done", flush=True)
"""


def _default_sigint() -> None:
    """Ctrl-C's default in the child, whatever this process inherited: a test run started with `&` from a
    script ignores SIGINT, and its children would too (Python then installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_ctrl_c_swallowed_by_a_fork_hook_still_stops_the_loop(tmp_path):
    """Python drops a KeyboardInterrupt raised in a fork hook ("Exception ignored"): without the hook's
    guard the loop ran on, and CI's Ctrl-C test waited for a run that never stopped."""
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_IN_A_FORK_HOOK)
    environ = {**os.environ, "PYTHONPATH": str(REPO), PATH_VAR: str(tmp_path / "loaders.json")}
    done = subprocess.run([sys.executable, "-m", "profiling.capture", str(script)], env=environ,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          preexec_fn=_default_sigint)
    assert "Exception ignored" in done.stderr  # the first KeyboardInterrupt really was swallowed
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr
    assert "epoch 0 done" not in done.stdout  # stopped in the epoch whose workers were starting
    assert json.loads((tmp_path / "loaders.json").read_text())["loaders"]  # the record is still written
