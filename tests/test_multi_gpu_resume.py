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
