"""Bit-identical resume: a run interrupted 3 times by real signals ends with the same weights.

The reference run trains 2 epochs (32 steps) without interruption. The other run is stopped
three times, each at a random step, by SIGUSR1 or SIGTERM sent to the real training process(es),
and is restarted with the same command each time. Both runs checkpoint every 5 steps too, so the
periodic saves are shown not to disturb anything. The final checkpoints must agree exactly:
every model tensor and every optimizer tensor, compared with torch.equal.
"""
from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time

import pytest
import torch

from ddp_helpers import SCRIPT, Proc, data_dir, small_args, subprocess_env  # noqa: F401
from multi_gpu import checkpoint
from multi_gpu.mnist_ddp import EXIT_PREEMPTED

LAUNCH_LINE = re.compile(r"\[rank (\d+)/\d+\] launcher=\w+ pid=(\d+)")
STEP_LINE = "Train Epoch:"  # lesson 1 prints one per --log-interval batches (here: every batch)


def _command(python_exe: str, nproc: int, args: list[str]) -> list[str]:
    if nproc == 1:
        return [python_exe, str(SCRIPT), *args]
    return [python_exe, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={nproc}", str(SCRIPT), *args]


def _final_state(folder) -> dict:
    path = checkpoint.find_latest_valid(folder)
    assert path is not None, f"no valid checkpoint in {folder}"
    state = checkpoint.load(path)
    assert state["finished"], f"{path} is not the end-of-training checkpoint"
    return state


def _assert_tensors_equal(a, b, where: str) -> None:
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_tensors_equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_tensors_equal(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [1, 2], ids=["1-process", "2-ddp-processes"])
def test_three_real_interruptions_resume_bit_identically(nproc, python_exe, data_dir, tmp_path):
    seed = random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    print(f"interruption plan seed: {seed}")
    # One DataLoader worker in the single-process run: the signal goes to the whole process
    # group, as Slurm does, and the worker must neither die nor act on it.
    workers = 1 if nproc == 1 else 0
    args = [*small_args(data_dir, epochs=2, workers=workers), "--log-interval", "1",
            "--checkpoint-every", "5"]
    env = subprocess_env()

    reference = tmp_path / "reference"
    out = subprocess.run(_command(python_exe, nproc, [*args, "--checkpoint-dir", str(reference)]),
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    interrupted = tmp_path / "interrupted"
    cmd = _command(python_exe, nproc, [*args, "--checkpoint-dir", str(interrupted)])
    for attempt in range(3):
        proc = Proc(cmd, tmp_path, env)
        try:
            proc.wait_for_text("training started", timeout=180)
            proc.wait_for_text("launcher=", count=nproc, timeout=60)
            pids = [int(pid) for _, pid in LAUNCH_LINE.findall(proc.output)]
            already = proc.output.count(STEP_LINE)
            steps = rng.randint(1, 6)  # 3 x (6 + a few steps of delivery lag) < 32 steps
            proc.wait_for_text(STEP_LINE, count=already + steps, timeout=180)
            sig = rng.choice([signal.SIGUSR1, signal.SIGTERM])
            if nproc == 1:
                os.killpg(proc.popen.pid, sig)  # the process and its DataLoader worker
            else:  # any non-empty set of ranks: they must agree to stop together
                for pid in rng.sample(pids, rng.randint(1, len(pids))):
                    os.kill(pid, sig)
        finally:
            rc, output = proc.finish(timeout=180)
        assert "preempted (" in output, f"attempt {attempt}: not interrupted (rc={rc}):\n{output[-3000:]}"
        if nproc == 1:
            assert rc == EXIT_PREEMPTED, output[-3000:]
        if attempt:
            assert "resumed from" in output

    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "resumed from" in out.stdout

    want, got = _final_state(reference), _final_state(interrupted)
    assert got["global_step"] == want["global_step"] == 32
    _assert_tensors_equal(want["model"], got["model"], "model")
    _assert_tensors_equal(want["optimizer"], got["optimizer"], "optimizer")
    _assert_tensors_equal(want["scheduler"], got["scheduler"], "scheduler")


@pytest.mark.slow
@pytest.mark.slurm
def test_usr1_under_srun_checkpoints_requeues_and_the_job_resumes(slurm2, python_exe, data_dir,
                                                                 tmp_path):
    """The Slurm path end to end: USR1 to the step's tasks, rank 0 runs `scontrol requeue`, and
    the job, started again by Slurm, continues from the checkpoint. On one node of the two-node
    cluster (any real Slurm would do), so that it runs beside the one-node sandbox's tests."""
    ckpt, log = tmp_path / "ckpt", tmp_path / "job.out"
    args = " ".join([*small_args(data_dir, epochs=20), "--log-interval", "1",
                     "--checkpoint-dir", str(ckpt)])
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n"
                      f"srun {python_exe} {SCRIPT} {args}\n")
    job = slurm2.submit("--requeue", "--nodes=1", "--ntasks=2", "--cpus-per-task=1", "--time=5",
                       "--open-mode=append", "--job-name=ddp-requeue", f"--output={log}",
                       str(script), cwd=tmp_path)

    def log_has(text: str, count: int = 1, limit: float = 180) -> None:
        deadline = time.monotonic() + limit
        while not (log.exists() and log.read_text().count(text) >= count):
            if time.monotonic() > deadline:
                slurm2.cancel(job)
                pytest.fail(f"{text!r} not in the job log after {limit} s:\n"
                            + (log.read_text()[-3000:] if log.exists() else "(no log)"))
            time.sleep(0.2)

    try:
        log_has("training started")
        log_has(STEP_LINE, count=3)
        # Like `--signal=USR1@90`: every task of the step gets it, the batch shell does not.
        assert slurm2.run("scancel", "--signal=USR1", job).returncode == 0
        log_has("preempted (SIGUSR1)")
        deadline = time.monotonic() + 60
        while "Restarts=1" not in (show := slurm2.run("scontrol", "show", "job", "-o", job).stdout):
            assert time.monotonic() < deadline, f"job {job} was not requeued:\n{show}"
            time.sleep(0.3)
        saved = checkpoint.find_latest_valid(ckpt)
        assert saved is not None and checkpoint.load(saved)["global_step"] >= 1
        # A requeued job waits cred_expire + 1 s before it may start; skip the wait.
        slurm2.run("scontrol", "update", f"jobid={job}", "StartTime=now")
        log_has(f"resumed from {saved}")
    finally:
        slurm2.cancel(job)
        slurm2.wait(job, limit=60)  # gone from the queue before the next user of the cluster comes
