"""multi_gpu/: launcher detection, the resumable sampler, checkpoint files, and real DDP runs.

Every DDP test starts real processes (torchrun or srun, gloo on the CPU) on a tiny generated
MNIST subset, so each process is mostly the cost of importing torch.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pytest
import torch

from multi_gpu import checkpoint, dist_env
from multi_gpu.sampler import ResumableDistributedSampler
from ddp_helpers import SCRIPT, Proc, data_dir, small_args, subprocess_env  # noqa: F401

RANK_LINE = re.compile(r"\[rank (\d+)/(\d+)\] parameters sha256=([0-9a-f]{64})")
LAUNCH_LINE = re.compile(r"\[rank (\d+)/(\d+)\] launcher=(\w+) pid=(\d+)")


# ----------------------------------------------------------------------------- launcher detection
SLURM_VARS = ("SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID",
              "SLURM_JOB_NODELIST", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "RANK",
              "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_NUM_NODES")


@pytest.fixture
def clean_env(monkeypatch):
    for name in SLURM_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_no_launcher_is_one_process(clean_env):
    env = dist_env.read_env()
    assert (env.rank, env.world_size, env.launcher) == (0, 1, "none")


def test_torchrun_variables_win(clean_env):
    for k, v in {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "n1",
                 "MASTER_PORT": "1234", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0",
                 "SLURM_JOB_ID": "9"}.items():
        clean_env.setenv(k, v)
    env = dist_env.read_env()
    assert (env.rank, env.local_rank, env.world_size, env.launcher) == (3, 1, 4, "torchrun")
    assert (env.master_addr, env.master_port) == ("n1", 1234)


def test_srun_step_reads_slurm(clean_env):
    for k, v in {"SLURM_STEP_ID": "0", "SLURM_PROCID": "3", "SLURM_LOCALID": "1",
                 "SLURM_NTASKS": "4", "SLURM_JOB_ID": "4242",
                 "SLURM_JOB_NODELIST": "gpu[07-08]"}.items():
        clean_env.setenv(k, v)
    env = dist_env.read_env()
    assert (env.rank, env.local_rank, env.world_size, env.launcher) == (3, 1, 4, "srun")
    assert env.master_addr == "gpu07"  # what `scontrol show hostnames gpu[07-08] | head -1` says
    assert env.master_port == 10000 + 4242  # the formula of jobs/lib/job.sh's dlkit_rendezvous


def test_array_tasks_get_their_own_port(clean_env):
    ports = set()
    for task in ("0", "1", "2"):
        for k, v in {"SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2",
                     "SLURM_JOB_ID": str(500 + int(task)), "SLURM_ARRAY_JOB_ID": "500",
                     "SLURM_ARRAY_TASK_ID": task, "SLURM_JOB_NODELIST": "vm"}.items():
            clean_env.setenv(k, v)
        ports.add(dist_env.read_env().master_port)
    assert ports == {10500, 10501, 10502}


def test_batch_step_is_not_a_rank(clean_env):
    # The batch script itself has SLURM_PROCID=0 and SLURM_NTASKS=2 but no SLURM_STEP_ID:
    # treating it as rank 0 of 2 would hang waiting for a rank 1 that never starts.
    for k, v in {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "7"}.items():
        clean_env.setenv(k, v)
    assert dist_env.read_env().world_size == 1


# ----------------------------------------------------------------------------- sampler
def test_sampler_skip_resumes_the_same_order():
    data = list(range(50))
    full = ResumableDistributedSampler(data, num_replicas=2, rank=1, seed=5)
    full.set_epoch(3)
    order = list(full)
    resumed = ResumableDistributedSampler(data, num_replicas=2, rank=1, seed=5)
    resumed.set_epoch(3)
    resumed.skip(8)
    assert list(resumed) == order[8:] and len(resumed) == len(order) - 8
    resumed.set_epoch(4)  # a new epoch starts from its beginning again
    assert len(resumed) == len(order)


# ----------------------------------------------------------------------------- checkpoint files
def _state(step: int) -> dict:
    return {"model": {"w": torch.full((3,), float(step))}, "epoch": 1, "step_in_epoch": step,
            "rng": [checkpoint.capture_rng(torch.device("cpu"))]}


def test_checkpoint_roundtrip_and_rng(tmp_path):
    torch.manual_seed(0)
    path = checkpoint.save(_state(4), tmp_path, 4)
    expected = torch.rand(5)
    state = checkpoint.load(path)  # weights_only=True: only tensors and plain values inside
    checkpoint.restore_rng(state["rng"][0], torch.device("cpu"))
    assert torch.equal(torch.rand(5), expected)
    assert json.loads(path.with_suffix(".json").read_text())["sha256"] == \
        hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", ["flip-a-byte", "truncate", "no-manifest"])
def test_damaged_newest_falls_back_with_a_warning(tmp_path, damage):
    checkpoint.save(_state(4), tmp_path, 4)
    newest = checkpoint.save(_state(8), tmp_path, 8)
    data = bytearray(newest.read_bytes())
    if damage == "flip-a-byte":
        data[len(data) // 2] ^= 0xFF
        newest.write_bytes(bytes(data))
    elif damage == "truncate":
        newest.write_bytes(bytes(data[: len(data) // 3]))
    else:
        newest.with_suffix(".json").unlink()
    with pytest.warns(UserWarning, match="skipping damaged checkpoint .*ckpt-000000008"):
        found = checkpoint.find_latest_valid(tmp_path)
    assert found == checkpoint.checkpoint_path(tmp_path, 4)
    assert torch.equal(checkpoint.load(found)["model"]["w"], torch.full((3,), 4.0))


def test_keep_prunes_old_checkpoints_and_leftovers(tmp_path):
    for step in (1, 2, 3):
        checkpoint.save(_state(step), tmp_path, step)
    (tmp_path / ".ckpt-000000004.pt.tmp-999").write_bytes(b"half")
    checkpoint.remove_stale(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ckpt-000000002.json", "ckpt-000000002.pt", "ckpt-000000003.json", "ckpt-000000003.pt"]


# ----------------------------------------------------------------------------- real runs
def test_global_batch_must_divide_world_size(python_exe, repo, data_dir, tmp_path):
    # Exactly the variables torchrun gives rank 0 of 2; the check runs before any rendezvous.
    env = subprocess_env({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"})
    args = small_args(data_dir, batch_size=15)
    out = subprocess.run([python_exe, str(SCRIPT), *args], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "--batch-size 15 is the global batch and must divide evenly over 2 processes" in out.stderr
    assert "Traceback" not in out.stderr


def _assert_two_equal_ranks(out: subprocess.CompletedProcess, launcher: str, metrics) -> dict:
    """Both ranks report the same parameter fingerprint, and came from the expected launcher."""
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    digests = {int(m.group(1)): m.group(3) for m in RANK_LINE.finditer(out.stderr)}
    assert sorted(digests) == [0, 1] and digests[0] == digests[1], out.stderr
    assert {m.group(3) for m in LAUNCH_LINE.finditer(out.stderr)} == {launcher}
    result = json.loads(metrics.read_text())
    assert result["launcher"] == launcher and result["world_size"] == 2
    return result


def test_torchrun_two_processes_end_with_equal_parameters(python_exe, repo, data_dir, tmp_path):
    metrics, board = tmp_path / "metrics.json", tmp_path / "tb"
    cmd = [python_exe, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(SCRIPT), *small_args(data_dir, epochs=1), "--metrics-json", str(metrics),
           "--tensorboard", str(board)]
    out = subprocess.run(cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True,
                         text=True, timeout=240)
    result = _assert_two_equal_ranks(out, "torchrun", metrics)
    assert result["local_batch_size"] == 8
    assert result["train_images"] == 256 and result["steps"] == 16
    assert result["settings"]["backend"] == "gloo"
    # --tensorboard: rank 0 alone writes, one point per epoch, counting both ranks' images
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    assert len(list(board.glob("events.out.tfevents.*"))) == 1
    events = EventAccumulator(str(board))
    events.Reload()
    assert [(p.step, p.value) for p in events.Scalars("accuracy/test")] == [
        (1, pytest.approx(result["test_accuracy"]))]
    assert events.Scalars("speed/images_per_s")[0].value == pytest.approx(result["images_per_sec"], rel=1e-3)


def test_ddp_refuses_lesson_4_recipe_flags(python_exe, repo, data_dir, tmp_path):
    out = subprocess.run([python_exe, str(SCRIPT), *small_args(data_dir), "--optimizer", "adamw"],
                         cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--optimizer: lesson 04's single-GPU speed options" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slurm
def test_srun_two_tasks_end_with_equal_parameters(slurm, python_exe, repo, data_dir, tmp_path):
    metrics = tmp_path / "metrics.json"
    cmd = ["srun", "--ntasks=2", "--cpus-per-task=1", "--time=5", "--job-name=ddp-test",
           python_exe, str(SCRIPT), *small_args(data_dir, epochs=1), "--metrics-json", str(metrics)]
    out = subprocess.run(cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True,
                         text=True, timeout=300)
    _assert_two_equal_ranks(out, "srun", metrics)


def test_kill_9_during_a_save_keeps_the_previous_checkpoint(python_exe, data_dir, tmp_path):
    ckpt = tmp_path / "ckpt"
    args = [*small_args(data_dir, epochs=1), "--checkpoint-dir", str(ckpt), "--checkpoint-every", "4"]
    proc = Proc([python_exe, str(SCRIPT), *args], tmp_path,
                subprocess_env({checkpoint.SLOW_SAVE_ENV: "1.5"}))
    try:
        proc.wait_for_path(ckpt / "ckpt-000000004.json", timeout=120)
        tmp = proc.wait_for_glob(ckpt, ".ckpt-000000008.pt.tmp-*", timeout=60)
        time.sleep(0.5)  # well inside the slowed-down write of the second checkpoint
        assert tmp.exists()
        os.killpg(proc.popen.pid, signal.SIGKILL)
    finally:
        rc, _ = proc.finish(timeout=30)
    assert rc == -signal.SIGKILL
    assert checkpoint.find_latest_valid(ckpt) == checkpoint.checkpoint_path(ckpt, 4)
    assert checkpoint.load(checkpoint.checkpoint_path(ckpt, 4))["global_step"] == 4
    # The real resume path picks it up and removes the half-written file.
    out = subprocess.run([python_exe, str(SCRIPT), *args], cwd=tmp_path, env=subprocess_env(),
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"resumed from {ckpt / 'ckpt-000000004.pt'}" in out.stdout
    assert not list(ckpt.glob(".ckpt-*"))


# ----------------------------------------------------------------------------- scaling table
def test_scaling_table_efficiency_against_the_one_gpu_run(tmp_path):
    from multi_gpu import scaling

    def resnet(gpus: int, total: float) -> dict:
        return {"benchmark": "resnet50-bf16-cl", "world_size": gpus, "per_gpu_batch": 256,
                "images_per_sec_total": total, "device_name": "GPU"}
    files = []
    for gpus, total in ((2, 1900.0), (1, 1000.0), (4, 3600.0)):
        files.append(tmp_path / f"r{gpus}.json")
        files[-1].write_text(json.dumps(resnet(gpus, total)))
    table = scaling.scaling_table([scaling.load_result(f) for f in files])
    assert list(table["gpus"]) == [1, 2, 4]
    assert list(table["speedup"].round(2)) == [1.0, 1.9, 3.6]
    assert list(table["efficiency_pct"].round(1)) == [100.0, 95.0, 90.0]
    assert "| resnet50-bf16-cl | 4 | 256 | 3,600 | 900 | 3.60x | 90.0 % |" in scaling.to_markdown(table)
    assert scaling.main([*map(str, files), "--plot", str(tmp_path / "s.png")]) == 0
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_checkpoints_is_a_do_nothing_hook_with_the_same_interface(tmp_path):
    """Without --checkpoint-dir the epoch loop gets NoCheckpoints: same calls, no effect, no step hook."""
    from multi_gpu.resumable import CheckpointHook, NoCheckpoints, start_checkpointing

    hook = NoCheckpoints()
    calls = {"begin_epoch", "stop_requested", "save", "step_hook", "progress", "preempted", "guard", "save_seconds"}
    assert calls <= set(dir(hook)) and calls - {"progress", "guard", "save_seconds"} <= set(dir(CheckpointHook))
    hook.begin_epoch(3, 5)
    assert hook.step_hook is None and not hook.stop_requested() and hook.save(finished=True) is None
    assert (hook.progress.epoch, hook.progress.step_in_epoch, hook.save_seconds, hook.preempted) == (1, 0, [], False)
    args = argparse.Namespace(checkpoint_dir=None)
    one = dist_env.DistEnv(rank=0, local_rank=0, world_size=1, launcher="none")
    set_up = start_checkpointing(args, None, None, None, one, torch.device("cpu"), ())
    assert isinstance(set_up.hook, NoCheckpoints) and set_up.rng_state is None and set_up.resumed_from is None
    assert not list(tmp_path.iterdir())  # nothing written


# ----------------------------------------------------------------------------- strong scaling (lesson 10)
def _strong(tmp_path, name: str, gpus: int, global_batch: int, total: float):
    path = tmp_path / f"{name}-g{global_batch}-{gpus}.json"
    path.write_text(json.dumps({"benchmark": name, "world_size": gpus, "per_gpu_batch": global_batch // gpus,
                                "global_batch": global_batch, "images_per_sec_total": total}))
    return path


def test_strong_scaling_series_share_a_global_batch_and_say_where_more_gpus_stop_paying(tmp_path):
    from multi_gpu import scaling

    files = [_strong(tmp_path, "resnet50-bf16-cl", gpus, g, total) for gpus, g, total in (
        (1, 64, 1000.0), (2, 64, 1500.0), (1, 128, 1000.0), (2, 128, 1850.0), (1, 256, 1000.0), (2, 256, 1980.0))]
    rows = [scaling.load_result(f) for f in files]
    strong = scaling.scaling_table(rows, "strong")
    assert list(strong["global_batch"]) == [64, 64, 128, 128, 256, 256]
    assert list(strong["speedup"].round(2)) == [1.0, 1.5, 1.0, 1.85, 1.0, 1.98]
    # the same runs seen as weak scaling: 64 and 128 per GPU on 1 and 2 GPUs; 32 per GPU is alone, left out
    weak = scaling.scaling_table(rows, "weak")
    assert list(zip(weak["batch_per_gpu"], weak["gpus"])) == [(64, 1), (64, 2), (128, 1), (128, 2)]
    assert scaling.where_it_stops_paying(strong) == [
        "resnet50-bf16-cl on 2 GPUs: pays down to 64 images per GPU (1.85x, 92 %); "
        "stops paying at 32 per GPU (1.50x, 75 %)"]
    assert "| resnet50-bf16-cl | 128 | 2 | 64 | 1,850 | 925 | 1.85x | 92.5 % |" in scaling.to_markdown(strong, "strong")
    assert scaling.main([*map(str, files), "--plot", str(tmp_path / "s.png"), "--csv", str(tmp_path / "s.csv")]) == 0
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import pandas as pd

    assert set(pd.read_csv(tmp_path / "s.csv")["scaling"]) == {"weak", "strong"}


def test_resnet_bench_refuses_a_global_batch_that_does_not_divide(python_exe, repo, tmp_path):
    env = subprocess_env({"RANK": "0", "WORLD_SIZE": "3", "LOCAL_RANK": "0"})  # rank 0 of 3, before rendezvous
    out = subprocess.run([python_exe, str(repo / "benchmarks" / "resnet_bench.py"), "--global-batch", "64",
                          "--device", "cpu"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith(
        "--global-batch 64 does not divide evenly over 3 processes (try 63 or 66)")
    assert "Traceback" not in out.stderr


def test_strong_scaling_benchmark_refuses_an_uneven_split_before_running(repo, tmp_path):
    env = subprocess_env({"DDP_BENCH_TINY": "1", "SCALING": "strong", "GPU_COUNTS": "1 2 3",
                          "STRONG_RESNET_BATCHES": "24 32", "OUT": str(tmp_path / "out")})
    out = subprocess.run(["bash", str(repo / "benchmarks" / "ddp_scaling.sh")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "ddp_scaling: global batch 32 does not divide evenly over 3 GPUs (try 30 or 33)"]
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
