"""The local Slurm sandbox is a real Slurm: a batch job with a fake GPU runs, is accounted in
slurmdbd (sacct, seff), and bringing the sandbox up again changes nothing."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import Slurm, run

SANDBOX = Path(__file__).resolve().parents[1] / "jobs" / "sandbox"
FAKE_GPU_DIR = "/var/lib/slurm/fake-gpu"

# The job reports what it was given, then tries to open both fake GPUs: there is no driver, so
# its own device gives ENXIO; with cgroup v1 (ConstrainDevices) the other one is fenced off (EPERM).
JOB = f"""#!/bin/bash
#SBATCH --job-name=sandbox-test
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=1
#SBATCH --mem=200M
#SBATCH --time=00:02:00
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "SLURM_JOB_GPUS=$SLURM_JOB_GPUS"
python3 - <<'PY'
import errno, os, time
held = bytearray(64 * 1024 * 1024)   # hold 64 MB for a moment, so accounting samples some memory
for index in (0, 1):
    try:
        os.close(os.open(f"{FAKE_GPU_DIR}/nvidia{{index}}", os.O_RDWR))
        print(f"open nvidia{{index}}: ok")
    except OSError as err:
        print(f"open nvidia{{index}}: {{errno.errorcode[err.errno]}}")
time.sleep(1.5)
PY
"""


@pytest.fixture(scope="module")
def gpu_job(slurm: Slurm, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Submit the job once, wait for it, and give its id and output file to the tests below."""
    workdir = tmp_path_factory.mktemp("sandbox-job")
    (workdir / "job.sh").write_text(JOB)
    job_id = slurm.submit(f"--output={workdir}/job-%j.out", "job.sh", cwd=workdir)
    slurm.wait(job_id, limit=60)
    return job_id, workdir / f"job-{job_id}.out"


def test_job_sees_one_fake_gpu(gpu_job: tuple[str, Path]) -> None:
    _, output = gpu_job
    lines = output.read_text().splitlines()
    gpu = next(line.split("=", 1)[1] for line in lines if line.startswith("SLURM_JOB_GPUS="))
    fenced = Path("/etc/slurm/cgroup.conf").exists()   # cgroup v1 with ConstrainDevices
    assert gpu in {"0", "1"}
    # Inside a device cgroup the job's GPUs are renumbered from 0; without one, the index is real.
    assert f"CUDA_VISIBLE_DEVICES={'0' if fenced else gpu}" in lines
    assert f"open nvidia{gpu}: ENXIO" in lines         # a character device with no driver behind it
    other = f"open nvidia{1 - int(gpu)}: {'EPERM' if fenced else 'ENXIO'}"
    assert other in lines                              # the GPU not given is fenced off


def test_sacct_records_the_gpu(slurm: Slurm, gpu_job: tuple[str, Path]) -> None:
    job_id, _ = gpu_job
    records = slurm.sacct(job_id)
    job, batch = records[job_id], records[f"{job_id}.batch"]
    assert (job["JobName"], job["State"], job["ExitCode"]) == ("sandbox-test", "COMPLETED", "0:0")
    assert "gres/gpu=1" in job["AllocTRES"].split(",")
    assert batch["State"] == "COMPLETED"


def test_seff_reports_memory(slurm: Slurm, gpu_job: tuple[str, Path]) -> None:
    job_id, _ = gpu_job
    slurm.sacct(job_id)                            # seff reads the same record: wait for it whole
    text = run("seff", job_id).stdout
    assert f"Job ID: {job_id}" in text
    assert "State: COMPLETED (exit code 0)" in text
    assert "Memory Efficiency:" in text and "of 200.00 MB" in text, text
    used = next(line for line in text.splitlines() if line.startswith("Memory Utilized:"))
    assert float(used.split()[2]) > 0, text


def test_slurm_up_again_is_a_quick_no_op(slurm: Slurm) -> None:
    if os.geteuid() != 0:
        pytest.skip("slurm-up.sh needs root")
    pids = {p.name: p.read_text() for p in Path("/run/slurm-sandbox").glob("*.pid")}
    start = time.monotonic()
    again = run("bash", str(SANDBOX / "slurm-up.sh"), timeout=60)
    seconds = time.monotonic() - start
    assert again.returncode == 0, again.stderr
    assert "started" not in again.stdout and again.stdout.count("already running") == 5, again.stdout
    assert seconds < 10, f"a second slurm-up took {seconds:.1f} s"
    assert {p.name: p.read_text() for p in Path("/run/slurm-sandbox").glob("*.pid")} == pids


def test_bad_input_is_one_error_line() -> None:
    if os.geteuid() != 0:
        pytest.skip("slurm-up.sh checks for root first")
    bad = run("bash", str(SANDBOX / "slurm-up.sh"), SANDBOX_GPUS="two")
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == ["slurm-up: ERROR: SANDBOX_GPUS must be a number from 1 to 99, got 'two'"]
    assert bad.stdout == ""


def test_scripts_pass_shellcheck(shellcheck: str, repo: Path) -> None:
    scripts = [*map(str, sorted(SANDBOX.glob("*.sh"))), str(repo / ".ci" / "run")]
    checked = run(shellcheck, "-x", *scripts, timeout=60)
    assert checked.returncode == 0, checked.stdout


def test_apt_install_skips_what_is_installed() -> None:
    done = run("bash", str(SANDBOX / "apt-install.sh"), "bash", "coreutils")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    usage = run("bash", str(SANDBOX / "apt-install.sh"))
    assert (usage.returncode, usage.stderr) == (1, "apt-install: ERROR: usage: apt-install.sh PKG...\n")


@pytest.mark.parametrize(("ci", "exit_code", "says"), [
    ("true", 1, "Slurm sandbox required in CI: sinfo not found"),
    ("", 0, "Slurm sandbox not available: sinfo not found"),
])
def test_missing_slurm_fails_in_ci_and_skips_outside(python_exe: str, repo: Path, ci: str,
                                                      exit_code: int, says: str) -> None:
    """The `slurm` fixture itself, run where no Slurm client is on PATH."""
    inner = run(python_exe, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                f"{repo}/tests/test_sandbox.py::test_sacct_records_the_gpu",
                timeout=120, CI=ci, PATH="/nonexistent")
    assert inner.returncode == exit_code, inner.stdout
    assert says in inner.stdout


def test_start_requeued_counts_a_job_the_scheduler_started_first_as_started(tmp_path: Path) -> None:
    """CI once lost this race on a busy machine: the job looked pending and eligible, the scheduler
    started it, and `scontrol update StartTime=now` then answered "no longer pending". A stand-in
    scontrol gives exactly those two answers, so the race happens every time here."""
    scontrol = tmp_path / "scontrol"
    scontrol.write_text('#!/bin/bash\n'
                        'if [[ $1 == -o ]]; then\n'
                        '  echo "JobId=58 JobState=PENDING Restarts=1 EligibleTime=2020-01-01T00:00:00"\n'
                        'elif [[ $3 == StartTime=now ]]; then\n'
                        '  echo "Job is no longer pending execution for job 58" >&2; exit 1\n'
                        'else exit 9; fi\n')
    scontrol.chmod(0o755)
    path = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    started = run("bash", str(SANDBOX / "start-requeued.sh"), "58", timeout=30, **path)
    assert started.returncode == 0, started.stderr
    scontrol.write_text(scontrol.read_text().replace("no longer pending execution", "Access/permission denied"))
    refused = run("bash", str(SANDBOX / "start-requeued.sh"), "58", timeout=30, **path)
    assert refused.returncode == 1 and "permission denied" in refused.stderr  # any other refusal still fails
