"""Shared fixtures.

Tests that need the local Slurm sandbox take the `slurm` fixture, and tests that need two nodes
the `slurm2` fixture (the two-node cluster beside it, `make slurm-up NODES=2`, which the fixture
starts when it is not up). Outside CI they skip with a visible reason when no controller answers;
with CI=true they fail, so a broken sandbox can never turn a red run green by skipping. The
fixtures' value is a small client for submitting a job, waiting for it and reading its accounting
record, so that each test does not reinvent polling.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TWO_NODE_CONF = "/var/lib/slurm-two-node/etc/slurm.conf"   # jobs/sandbox/two-node.sh: TWO_CONF
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def run(*cmd: str, timeout: float = 30, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a command with extra environment. Every Slurm client blocks for minutes when the
    controller is down, hence the timeout: a dead sandbox fails a test, it never hangs it."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **env})


class Slurm:
    """Submit, wait, account: the three things a job test does. With `conf`, every command talks
    to the cluster that config describes (SLURM_CONF), as the two-node cluster's clients do."""

    def __init__(self, conf: str | None = None) -> None:
        self.env = {"SLURM_CONF": conf} if conf else {}

    def run(self, *cmd: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Any Slurm command against this cluster."""
        return run(*cmd, timeout=timeout, **self.env)

    def submit(self, *sbatch_args: str, cwd: Path | None = None) -> str:
        """`sbatch --parsable ARGS...`; returns the job id (fails the test if sbatch refuses)."""
        done = subprocess.run(["sbatch", "--parsable", *sbatch_args], cwd=cwd, capture_output=True,
                              text=True, timeout=30, check=False, env={**os.environ, **self.env})
        assert done.returncode == 0, f"sbatch {' '.join(sbatch_args)}: {done.stderr.strip()}"
        return done.stdout.strip().split(";")[0]

    def cancel(self, job_id: str) -> None:
        """Forbid the job's requeue, then cancel it. `scancel` sends SIGTERM, which lesson 07's script
        takes for a preemption: it checkpoints and runs `scontrol requeue`, and Slurm 22.05 put the
        cancelled job back in the queue (a CI run's cleanup waited 60 s for a job that had restarted)."""
        self.run("scontrol", "update", f"jobid={job_id}", "Requeue=0")
        self.run("scancel", job_id)

    def wait(self, job_id: str, limit: float = 120) -> None:
        """Poll squeue every 0.1 s until the job has left the queue. (`sbatch --wait` polls
        every 2, then 8, then 32 s, which makes short jobs look slow.)"""
        deadline = time.monotonic() + limit
        while self.run("squeue", "-h", "-j", job_id).stdout.strip():
            if time.monotonic() > deadline:
                self.cancel(job_id)
                pytest.fail(f"job {job_id} still queued after {limit} s (cancelled)")
            time.sleep(0.1)

    def sacct(self, job_id: str, fields: str = "JobID,JobName,State,ExitCode,Elapsed,AllocTRES,MaxRSS",
              limit: float = 15) -> dict[str, dict[str, str]]:
        """The job's records as {JobID: {field: value}}, steps included ("12.batch").

        slurmdbd gets a finished job's record in pieces (a step may arrive before the job, under
        the placeholder name "allocation"; a CI run read a job line FAILED with ExitCode 0:0 that
        later read 2:0), so poll until the job's line has a final state, a real name and, while
        the controller still holds the job, the controller's own state (and exit code, where the
        script's exit ended the job: a cancelled job's line keeps 0:0, the controller says 0:15)."""
        deadline = time.monotonic() + limit
        while True:
            ended = self.ended(job_id)
            out = self.run("sacct", "-P", "-j", job_id, "-o", fields).stdout
            header, *rows = out.strip().splitlines() or [""]
            records = {row.split("|")[0]: dict(zip(header.split("|"), row.split("|"))) for row in rows}
            job = records.get(job_id, {})
            settled = job.get("State", "PENDING") not in {"PENDING", "RUNNING", "COMPLETING"}
            agrees = ended is None or (job.get("State", "").split(" ")[0] == ended[0] and (
                ended[0] not in {"COMPLETED", "FAILED"} or job.get("ExitCode", ended[1]) == ended[1]))
            if (settled and agrees and job.get("JobName", "") != "allocation") or time.monotonic() > deadline:
                return records
            time.sleep(0.3)

    def show(self, job_id: str) -> list[dict[str, str]]:
        """The controller's view of a job (one record per array task); [] once it forgets the job,
        MinJobAge seconds after its end."""
        out = self.run("scontrol", "show", "job", "-o", job_id).stdout
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines() if line.strip()]

    def ended(self, job_id: str) -> tuple[str, str] | None:
        """(JobState, ExitCode) of a job the controller still holds and has ended, else None. The
        controller's record is whole at once; the accounting database's arrives in pieces."""
        job = next(iter(self.show(job_id)), {})
        if job.get("JobState", "PENDING") in {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED",
                                             "REQUEUE_HOLD", "SUSPENDED"}:
            return None
        return job["JobState"], job.get("ExitCode", "")


def _slurm_problem(conf: str | None = None, nodes: int = 1) -> str | None:
    """Why the sandbox is unusable, or None when a controller answers and `nodes` nodes are up."""
    if shutil.which("sinfo") is None:
        return "sinfo not found: start the sandbox with `make slurm-up`"
    try:
        out = Slurm(conf).run("sinfo", "-h", "-N", "-o", "%t", timeout=10)
    except subprocess.TimeoutExpired:
        return "sinfo timed out: the Slurm controller is not answering (`make slurm-up`)"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip() or out.stdout.strip()}"
    states = out.stdout.split()
    # A trailing "*" means the node stopped answering the controller.
    usable = [s for s in states if s.startswith(("idle", "mix", "alloc", "comp")) and not s.endswith("*")]
    if len(usable) < nodes:
        wanted = "no usable Slurm node" if nodes == 1 else f"fewer than {nodes} usable Slurm nodes"
        return f"{wanted} (states: {states or 'none'})"
    return None


@pytest.fixture(scope="session")
def slurm() -> Slurm:
    """Require the real local Slurm: skip outside CI, fail in CI."""
    return _require(_slurm_problem(), Slurm())


def _two_node_cluster() -> Slurm:
    """The two-node cluster, started when it is not up (that takes about two seconds)."""
    if _slurm_problem(TWO_NODE_CONF, nodes=2) is not None and os.geteuid() == 0 and shutil.which("sinfo"):
        up = run("bash", str(REPO / "jobs" / "sandbox" / "two-node-up.sh"), timeout=180)
        if up.returncode != 0:
            return _require(f"two-node-up.sh failed: {up.stderr.strip()[-500:]}")
    return _require(_slurm_problem(TWO_NODE_CONF, nodes=2), Slurm(TWO_NODE_CONF))


def _require(problem: str | None, client: Slurm | None = None) -> Slurm:
    """The sandbox policy: fail in CI, skip elsewhere, when `problem` is set."""
    if problem is not None:
        if IN_CI:
            pytest.fail(f"Slurm sandbox required in CI: {problem}", pytrace=False)
        pytest.skip(f"Slurm sandbox not available: {problem}")
    assert client is not None
    return client


@pytest.fixture(scope="session")
def slurm2() -> Slurm:
    """Require the two-node cluster (nodes n1 and n2): skip outside CI, fail in CI. Its commands
    run with SLURM_CONF set to the two-node config."""
    return _two_node_cluster()


@pytest.fixture(scope="session")
def shellcheck() -> str:
    """Path of shellcheck (`make system-deps` installs it): skip outside CI, fail in CI."""
    path = shutil.which("shellcheck")
    if path is None:
        if IN_CI:
            pytest.fail("shellcheck missing: `make system-deps` installs it", pytrace=False)
        pytest.skip("shellcheck not installed (make system-deps)")
    return path


@pytest.fixture(scope="session")
def python_exe() -> str:
    """The interpreter running the tests: jobs and subprocesses must use the same venv."""
    return sys.executable


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


#: Fixtures that submit to, or read the state of, the one-node Slurm sandbox.
_SANDBOX_FIXTURES = {"slurm", "kit"}
TWO_NODE_LOCK = Path("/tmp/dlkit-two-node-cluster.lock")


def _uses_two_node_cluster(item: pytest.Item) -> bool:
    """A test of the two-node cluster (`slurm2`), or a lesson whose commands start or use it."""
    if "slurm2" in getattr(item, "fixturenames", ()):
        return True
    path = getattr(getattr(item, "callspec", None), "params", {}).get("path")
    return (item.name.startswith("test_lesson_runs_in_order") and isinstance(path, Path)
            and "slurm-two-node" in path.read_text())


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (`make test` runs two workers), every test that uses the one-node sandbox runs
    on one worker, in file order: the sandbox node has 2 CPUs, the lessons build on each other's jobs,
    and a job test must never wait for another test's job. The two-node cluster's own tests are a second
    group, which may run beside it (a cluster of its own; the lock below keeps its users apart).
    Every other test runs with the rest of its file (as `--dist loadfile` would), so a module's shared
    fixture, such as one profiled run that several tests read, is built once. (Marked as each test is
    collected, before xdist reads the groups.)"""
    names = set(getattr(item, "fixturenames", ()))
    if _SANDBOX_FIXTURES & names or item.get_closest_marker("slurm") and "slurm2" not in names:
        group = "sandbox"
    elif "slurm2" in names:
        group = "two-node"
    else:
        group = item.path.name
    item.add_marker(pytest.mark.xdist_group(group))


@contextlib.contextmanager
def _machine_share(alone: bool) -> Iterator[None]:
    """Under xdist, an `alone` test (a lesson: its excerpts are a quiet 2-core laptop's output, and some are
    measurements) waits for the test on the other worker to finish and keeps the next one from starting;
    every other test shares the machine. A turnstile in front of the shared lock lets a waiting `alone`
    test in ahead of the tests that come after it (flock alone would let them starve it)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:  # one process: nothing runs beside the test
        yield
        return
    import fcntl

    stem = Path(tempfile.gettempdir()) / f"dlkit-pytest-{run}"
    with open(f"{stem}.turnstile", "a") as turnstile, open(f"{stem}.machine", "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """The machine's share first (`_machine_share`), then one user of the two-node cluster at a time,
    across xdist workers: its tests stop nodes and take the cluster down and up, and lessons 06 and 10
    run jobs on it (file locks, held from setup to teardown, always taken in this order)."""
    import fcntl

    with _machine_share(item.get_closest_marker("alone") is not None), contextlib.ExitStack() as stack:
        if _uses_two_node_cluster(item):
            lock = stack.enter_context(TWO_NODE_LOCK.open("a"))
            fcntl.flock(lock, fcntl.LOCK_EX)
            stack.callback(fcntl.flock, lock, fcntl.LOCK_UN)
        yield


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker with `--dist loadgroup`, every test id must carry its group by now; if not
    (pytest 9.2 ids are read-only to xdist 3.8), the sandbox's tests would run side by side and fail
    as a busy machine's would, so stop with the reason instead."""
    if getattr(config.option, "loadgroup", False) and any("@" not in item.nodeid for item in items):
        raise pytest.UsageError("pytest-xdist's --dist loadgroup did not group the tests "
                                "(pytest >= 9.2 with xdist 3.8?); pyproject.toml pins pytest < 9.2")
