"""The many-node jobs, run for real on the two-node cluster (`make slurm-up NODES=2`).

Nodes n1 and n2 are two slurmd daemons on this machine, each with its own hostname, address and
fake GPU. The tests run lesson 06's template across them, take a node away in the middle of a
training job and check that the requeued job resumes bit-identically, make a wrong MASTER_ADDR
fail fast, and show that the cluster comes up twice safely and goes down without a trace.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, Slurm, run

pytestmark = pytest.mark.slurm

SANDBOX = REPO / "jobs" / "sandbox"
TEMPLATE = str(REPO / "jobs" / "templates" / "ddp-nodes.sbatch")
# 2048 digits at a global batch of 64: 32 steps an epoch, 64 in all, a checkpoint every 8.
TRAIN = ["--synthetic", "--train-samples", "2048", "--test-samples", "256", "--epochs", "2", "--seed", "3",
         "--checkpoint-every", "8", "--keep-checkpoints", "100", "--no-requeue", "--device", "cpu"]
# One rank per node, on one of its two cores: two such jobs fit on the cluster at once.
NODES2 = ["--nodes=2", "--gres=gpu:1", "--cpus-per-task=1", "--mem=1500M", "--time=10"]


def submit(slurm2: Slurm, cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """`dljobs sbatch --parsable ARGS` against the two-node cluster, from `cwd`."""
    site = cwd / "site.env"
    if not site.exists():
        venv = Path(sys.executable).parents[1]
        site.write_text(f"DLKIT_VENV={venv}\nDLKIT_DATA_DIR={cwd / 'data'}\n")
    out = subprocess.run([sys.executable, "-m", "jobs", "sbatch", "--parsable", *args], cwd=cwd,
                         env={**os.environ, **slurm2.env, "DLKIT_SITE_ENV": str(site), **(env or {})},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"submission failed: {out.stderr}"
    return out.stdout.strip().split(";")[0]


def digests(log: str) -> dict[str, str]:
    """rank -> final parameter digest, from the `[rank R/W] parameters sha256=...` lines."""
    return dict(re.findall(r"\[rank (\d+)/2\] parameters sha256=([0-9a-f]{64})", log))


def wait_for(what: str, found, limit: float, slurm2: Slurm, job: str, log: Path) -> None:
    deadline = time.monotonic() + limit
    while not found():
        if time.monotonic() > deadline:
            slurm2.cancel(job)
            tail = log.read_text()[-3000:] if log.exists() else "(no log)"
            pytest.fail(f"{what}: not seen after {limit} s:\n{tail}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def uninterrupted(slurm2: Slurm, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str]:
    """Lesson 06's template on both nodes, start to end: the reference for the node-loss test."""
    cwd = tmp_path_factory.mktemp("two-nodes")
    job = submit(slurm2, cwd, *NODES2, "--job-name=reference", TEMPLATE, *TRAIN,
                 "--checkpoint-dir", str(cwd / "ckpt"))
    slurm2.wait(job, limit=400)
    log = cwd / f"reference-{job}.out"
    return job, cwd, log.read_text() if log.exists() else "(no log)"


@pytest.mark.slow
def test_ddp_template_trains_across_both_nodes(slurm2: Slurm, uninterrupted: tuple[str, Path, str]) -> None:
    job, cwd, log = uninterrupted
    record = slurm2.sacct(job, "JobID,JobName,State,ExitCode,NNodes,NodeList")[job]
    assert (record["State"], record["NNodes"], record["NodeList"]) == ("COMPLETED", "2", "n[1-2]"), log[-3000:]
    assert "rendezvous:    MASTER_ADDR=n1 " in log                      # the first node, resolved there
    hosts = dict(re.findall(r"\[rank (\d)/2\] launcher=torchrun pid=\d+ device=cpu host=(n\d)", log))
    assert sorted(hosts.values()) == ["n1", "n2"], log[-3000:]           # one torchrun per node
    final = digests(log)
    assert sorted(final) == ["0", "1"] and len(set(final.values())) == 1, log[-3000:]


@pytest.mark.slow
def test_losing_a_node_requeues_and_resumes_bit_identically(slurm2: Slurm, tmp_path: Path,
                                                            uninterrupted: tuple[str, Path, str]) -> None:
    """n2 is set DOWN mid-training (what Slurm does to a node that stops answering): the job is
    requeued at once, runs again on both nodes, resumes from the newest checkpoint and ends with the
    reference's weights, while every file of the first attempt stays as it was."""
    ckpt = tmp_path / "ckpt"
    job = submit(slurm2, tmp_path, *NODES2, "--job-name=lose-node", "--requeue", "--open-mode=append",
                 TEMPLATE, *TRAIN, "--checkpoint-dir", str(ckpt))
    log = tmp_path / f"lose-node-{job}.out"
    wait_for("a first checkpoint", lambda: list(ckpt.glob("ckpt-*.pt")), 300, slurm2, job, log)
    state = slurm2.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()
    assert state == "RUNNING", f"job {job} is {state!r} before the node loss:\n{log.read_text()[-3000:]}"
    try:
        down = slurm2.run("scontrol", "update", "nodename=n2", "state=down", "reason=test-node-loss")
        assert down.returncode == 0, down.stderr
        wait_for("the requeue", lambda: "Restarts=1" in slurm2.run("scontrol", "show", "job", "-o", job).stdout,
                 60, slurm2, job, log)
        # Held, so that the second attempt cannot start before the first one's files are recorded.
        held = slurm2.run("scontrol", "hold", job)
        assert held.returncode == 0, held.stderr
    finally:
        slurm2.run("scontrol", "update", "nodename=n2", "state=resume")  # ReturnToService=2 does it too
    # Once the job is pending again (not COMPLETING), the first attempt's processes are gone.
    wait_for("the first attempt's end", lambda: slurm2.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()
             == "PENDING", 120, slurm2, job, log)
    first = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in ckpt.iterdir()}
    first_log = log.read_bytes()
    assert first, "the first attempt left no checkpoint"
    assert slurm2.run("scontrol", "release", job).returncode == 0
    started = run("bash", str(SANDBOX / "start-requeued.sh"), job, timeout=150, **slurm2.env)
    assert started.returncode == 0, started.stderr
    slurm2.wait(job, limit=400)

    text = log.read_text()
    record = slurm2.sacct(job, "JobID,JobName,State,NNodes")[job]
    assert (record["State"], record["NNodes"]) == ("COMPLETED", "2"), text[-3000:]
    assert "SLURM_RESTART_COUNT=1" in text, text[-3000:]
    resumed = re.findall(r"^resumed from \S*/(ckpt-\d+\.pt) ", text, re.M)
    assert resumed == [max(name for name in first if name.endswith(".pt"))], text[-3000:]  # the newest
    history = slurm2.run("sacct", "-D", "-X", "-n", "-P", "-j", job, "-o", "State").stdout.split()
    assert history[0] in {"NODE_FAIL", "REQUEUED"} and history[-1] == "COMPLETED", history
    final = digests(text)
    assert len(set(final.values())) == 1 and set(final.values()) == set(digests(uninterrupted[2]).values()), \
        f"resumed {final} vs uninterrupted {digests(uninterrupted[2])}"
    # Nothing from the first attempt lost or overwritten.
    assert text.encode().startswith(first_log)
    assert {name: hashlib.sha256((ckpt / name).read_bytes()).hexdigest() for name in first} == first


def test_unresolvable_master_addr_fails_fast_naming_the_rendezvous(slurm2: Slurm, tmp_path: Path) -> None:
    """A typo in MASTER_ADDR would make torchrun retry for minutes; the job library's check fails
    the job at once, long before its 10-minute time limit."""
    start = time.monotonic()
    job = submit(slurm2, tmp_path, *NODES2, "--job-name=bad-addr", TEMPLATE, "--synthetic",
                 env={"DLKIT_MASTER_ADDR": "n1-typo"})
    slurm2.wait(job, limit=120)
    seconds = time.monotonic() - start
    log = (tmp_path / f"bad-addr-{job}.out").read_text()
    record = slurm2.sacct(job, "JobID,JobName,State,ExitCode,Elapsed")[job]
    assert (record["State"], record["ExitCode"]) == ("FAILED", "2:0"), log
    assert ("dlkit: error: rendezvous: MASTER_ADDR=n1-typo does not resolve on n1 (getent hosts); "
            "the job's nodes are n1 n2") in log
    assert "torchrun" not in log.split("rendezvous:", 1)[1]   # nothing was launched
    assert seconds < 120 and record["Elapsed"] < "00:01:00", (seconds, record)



@pytest.mark.slow
def test_master_addr_of_a_host_outside_the_job_fails_within_the_rendezvous_timeout(slurm2: Slurm,
                                                                                    tmp_path: Path) -> None:
    """The classic: MASTER_ADDR taken on the login node. The name resolves, so only torchrun can
    notice; with DLKIT_RDZV_TIMEOUT=10 every node gives up after its connect attempts (two of 10 s)
    and the job fails in well under a minute of its 10-minute limit, saying why."""
    login = run("hostname", "-s").stdout.strip()
    job = submit(slurm2, tmp_path, *NODES2, "--job-name=login-addr", TEMPLATE, "--synthetic",
                 env={"DLKIT_MASTER_ADDR": login, "DLKIT_RDZV_TIMEOUT": "10"})
    slurm2.wait(job, limit=240)
    log = (tmp_path / f"login-addr-{job}.out").read_text()
    record = slurm2.sacct(job, "JobID,JobName,State,Elapsed,Timelimit")[job]
    assert (record["State"], record["Timelimit"]) == ("FAILED", "00:10:00"), log[-3000:]
    assert f"rendezvous:    MASTER_ADDR={login} " in log
    assert f"trying to connect to ({login}, " in log
    assert "RendezvousConnectionError: The connection to the C10d store has failed" in log
    assert "launcher=torchrun" not in log                     # no rank ever started
    minutes, seconds = map(int, record["Elapsed"].split(":")[1:])
    assert record["Elapsed"].startswith("00:0") and minutes * 60 + seconds < 150, record

# ---------------------------------------------------------------- GPU shards (gres/shard)
@pytest.mark.slow
def test_shard_array_runs_four_tasks_at_once_on_two_gpus(slurm2: Slurm, tmp_path: Path) -> None:
    """4 tasks of `--gres=shard:1` on 2 GPUs: with whole GPUs only 2 could run at a time."""
    array = submit(slurm2, tmp_path, "--array=0-3", "--mem=1G", str(REPO / "jobs" / "templates" / "shard-array.sbatch"),
                   "--synthetic", "--train-samples", "512", "--test-samples", "256", "--max-steps", "3",
                   "--device", "cpu")
    slurm2.wait(array, limit=300)
    records = slurm2.sacct(array, "JobID,JobName,State,Start,End,AllocTRES,NodeList")
    tasks = {k: v for k, v in records.items() if re.fullmatch(rf"{array}_\d", k)}
    logs = "\n".join(p.read_text() for p in sorted(tmp_path.glob(f"mnist-shards-{array}_*.out")))
    assert sorted(tasks) == [f"{array}_{i}" for i in range(4)], records
    assert {t["State"] for t in tasks.values()} == {"COMPLETED"}, logs[-3000:]
    assert all("gres/shard=1" in t["AllocTRES"].split(",") for t in tasks.values()), tasks
    assert all("gres/gpu" not in t["AllocTRES"] for t in tasks.values()), tasks
    # All four ran at the same time: the last one started before the first one ended.
    assert max(t["Start"] for t in tasks.values()) < min(t["End"] for t in tasks.values()), tasks
    assert sorted(t["NodeList"] for t in tasks.values()) == ["n1", "n1", "n2", "n2"], tasks
    results = sorted(p.name for p in (tmp_path / "runs" / f"shards-{array}").glob("*.json"))
    assert results == ["lr0.5.json", "lr1.0.json", "lr2.0.json", "lr4.0.json"], logs[-3000:]
    assert logs.count("GPU 0, 1 shard(s)") == 4, logs[-3000:]


def test_whole_gpus_and_shards_in_one_job_are_refused_at_submission(slurm2: Slurm) -> None:
    for ask in (["--gres=gpu:1,shard:1"], ["--gpus=1", "--gres=shard:1"]):
        refused = slurm2.run("sbatch", *ask, "--wrap", "true")
        assert refused.returncode == 1, refused.stdout
        assert "Invalid generic resource (gres) specification" in refused.stderr


# ---------------------------------------------------------------- up and down (last: it stops the cluster)

def _two_node_traces() -> dict[str, list[str]]:
    """What the two-node cluster leaves on the machine: its daemons, the bind mounts of its hosts
    file (seen from any process), its cgroup folders and its pid files."""
    daemons = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            comm = (proc / "comm").read_text().strip()
            status = (proc / "status").read_text()
        except OSError:
            continue
        if comm in {"slurmd", "slurmctld", "slurmstepd"} and b"slurm-two-node" in environ \
                and "State:\tZ" not in status:
            daemons.append(f"{comm} {proc.name}")
    mounts = sorted({line.split()[4] for mi in Path("/proc").glob("[0-9]*/mountinfo")
                     for line in _lines(mi) if "slurm-two-node" in line})
    cgroups = sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/slurm_n[12]"))
    pidfiles = sorted(str(p) for p in Path("/run/slurm-two-node").glob("*"))
    return {"daemons": sorted(daemons), "mounts": mounts, "cgroups": cgroups, "pid files": pidfiles}


def _managed(traces: dict[str, list[str]]) -> list[str]:
    """The daemons two-node-up.sh starts (slurmctld, slurmd), without the jobs' slurmstepd."""
    return [daemon for daemon in traces["daemons"] if not daemon.startswith("slurmstepd ")]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def test_up_twice_is_safe_and_down_leaves_nothing_behind(slurm2: Slurm, slurm: Slurm) -> None:
    """Runs last in this file: it takes the cluster down and brings it back."""
    if os.geteuid() != 0:
        pytest.skip("the sandbox scripts need root")
    shared = {p.name: p.read_text() for p in Path("/run/slurm-sandbox").glob("*.pid")}
    # A running job, which the down must clear.
    job = slurm2.submit("--nodes=2", "--mem=50M", "--output=/dev/null", "--wrap", "sleep 300")
    wait_for("a running job", lambda: slurm2.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip() == "RUNNING",
             60, slurm2, job, Path("/nonexistent"))
    before = _two_node_traces()
    try:
        assert len(before["daemons"]) >= 3 and before["pid files"], before        # 2 slurmd, slurmctld, steps
        assert len(before["cgroups"]) >= 2 and before["mounts"], before

        again = run("bash", str(SANDBOX / "two-node-up.sh"), timeout=120)
        assert again.returncode == 0, again.stderr
        assert again.stdout.count("already running") == 3 and " started (pid" not in again.stdout, again.stdout
        # the same slurmctld and slurmd processes; the job's slurmstepd may start after squeue says RUNNING (CI saw it)
        assert _managed(_two_node_traces()) == _managed(before)
    except BaseException:
        slurm2.cancel(job)  # a job left running holds a CPU of each node from the tests that follow
        raise

    down = run("bash", str(SANDBOX / "two-node-down.sh"), timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    cancelled = re.search(r"cancelling jobs ([\d ]+)", down.stdout)  # an earlier test's job may still be ending
    assert cancelled and job in cancelled.group(1).split(), down.stdout
    time.sleep(2)   # stopped daemons linger as zombies until PID 1 reaps them
    assert _two_node_traces() == {"daemons": [], "mounts": [], "cgroups": [], "pid files": []}
    # The one-node sandbox was not touched: same daemons, still answering.
    assert {p.name: p.read_text() for p in Path("/run/slurm-sandbox").glob("*.pid")} == shared
    assert slurm.run("sinfo", "-h", "-o", "%t").returncode == 0

    start = time.monotonic()
    up = run("bash", str(SANDBOX / "two-node-up.sh"), timeout=120)
    seconds = time.monotonic() - start
    assert up.returncode == 0, up.stderr
    assert seconds < 30, f"two-node start took {seconds:.1f} s"
    assert sorted(slurm2.run("srun", "--nodes=2", "--mem=50M", "hostname").stdout.split()) == ["n1", "n2"]
