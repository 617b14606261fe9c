"""End-to-end tests of `dlkit-prof run`, `compare`, `sweep` (local and through Slurm) and the HTML page.

Real kernprof runs of the lesson script on a tiny synthetic set. Each torch start costs ~10-20 s
on the 2-core CI machine, so the expensive runs are module fixtures that several tests read:
one profiled run (with --sample-gpu), and one local sweep whose advice step profiles a second
setting, which gives `compare` its second real profile.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import pandas as pd
import pytest

TINY = ["--synthetic", "--train-samples", "256", "--test-samples", "128", "--epochs", "1"]
REPORT_FILES = (".lprof", ".meta.json", ".samples.csv", ".report.txt", ".report.md", ".report.html",
                ".report.json", ".lines.csv", ".lines.png", ".phases.png", ".utilisation.png",
                ".curve.json", ".loader-curve.png")  # the loader curve at exit, held for the loop's step


def prof_cli(python: str, repo: Path, *args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["PYTHONPATH"] = str(repo)
    return subprocess.run([python, "-m", "profiling", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("profiling_e2e")


@pytest.fixture(scope="module")
def profiled(workdir, python_exe, repo) -> tuple[subprocess.CompletedProcess, Path]:
    """One real `run --sample-gpu` of the lesson script at num_workers=0, its loader made the bottleneck by heavy
    augmentation: with the plain loader its 10 traced batches waited 14 % of a step on a quiet machine, and under
    CI's load once under 5 %, so the run was called compute-bound and the curve was not advised from."""
    out = workdir / "run0" / "nested"  # does not exist yet: run must create it
    proc = prof_cli(python_exe, repo, "run", "--output-dir", str(out), "--sample-gpu", "--sample-interval", "0.5",
                  "--", str(repo / "mnist_classify.py"), *TINY, "--augment", "heavy", "--train-samples", "640",
                  "--num-workers", "0", "--data-dir", str(workdir / "data"), cwd=workdir)
    return proc, out


@pytest.fixture(scope="module")
def local_sweep(workdir, python_exe, repo) -> tuple[subprocess.CompletedProcess, Path]:
    """`sweep --workers 0,1` with no --lprof: it profiles the current setting (num_workers=1) first."""
    out = workdir / "sweep"
    proc = prof_cli(python_exe, repo, "sweep", "--workers", "0,1", "--output-dir", str(out), "--",
                  str(repo / "mnist_classify.py"), *TINY, "--max-steps", "3", "--num-workers", "1",
                  "--data-dir", str(workdir / "data"), cwd=workdir)
    return proc, out


@pytest.mark.slow
def test_run_writes_every_file(profiled):
    proc, out = profiled
    assert proc.returncode == 0, proc.stderr
    for suffix in REPORT_FILES:
        path = out / f"mnist_classify{suffix}"
        assert path.is_file() and path.stat().st_size > 0, f"missing {path.name}"
    meta = json.loads((out / "mnist_classify.meta.json").read_text())
    assert meta["exit_code"] == 0 and meta["num_workers"] == 0 and meta["argv"][-4:-2] == ["--num-workers", "0"]
    assert meta["cpus"] == len(os.sched_getaffinity(0)) and meta["hostname"]
    assert "--no-config" in meta["command"] and meta["start_time"] <= meta["end_time"]
    report = json.loads((out / "mnist_classify.report.json").read_text())
    assert {"phases", "advice"} <= set(report) and "num_workers" in report["advice"]
    assert report["advice"]["numbers"]["basis"] == "measured" and report["curve"]["points"][0]["workers"] == 0
    assert report["curve"]["hold_ms"] > 0 and not (out / "mnist_classify.curve.png").exists()  # drawn by the report
    lines = pd.read_csv(out / "mnist_classify.lines.csv")
    assert lines[lines["phase"] == "data_wait"]["source"].str.contains("train_loader").any()
    assert "num_workers" in proc.stdout and "files:" in proc.stdout


@pytest.mark.slow
def test_sample_gpu_without_gpu_says_so_and_samples_cpu(profiled):
    proc, out = profiled
    samples = pd.read_csv(out / "mnist_classify.samples.csv")
    assert (samples["device"] == "cpu").sum() >= 3 and samples["util_pct"].max() > 0
    if shutil.which("nvidia-smi") is None:
        assert "GPU sampling off" in proc.stderr
        assert sum("GPU sampling off" in line for line in proc.stderr.splitlines()) == 1


def test_run_keeps_failing_exit_code_and_still_reports(tmp_path, python_exe, repo):
    script = tmp_path / "fails.py"
    script.write_text("import sys\n\n@profile\ndef work(items):\n    total = 0\n"
                      "    for item in items:\n        total += item\n    return total\n\n"
                      "work(range(1000))\nsys.exit(3)\n")
    proc = prof_cli(python_exe, repo, "run", "--output-dir", "out", "--", "fails.py", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "exited with code 3" in proc.stderr
    assert json.loads((tmp_path / "out" / "fails.meta.json").read_text())["exit_code"] == 3
    assert (tmp_path / "out" / "fails.report.txt").is_file()
    # the report says the script stopped (a crash once read as "the run ended within the traced part")
    assert "the script exited with code 3: this report covers what ran before it stopped" in proc.stdout


def test_run_of_missing_script_fails_cleanly(tmp_path, python_exe, repo):
    """Refused before kernprof starts: one line, exit 2, and nothing written (no stray .meta.json)."""
    proc = prof_cli(python_exe, repo, "run", "--output-dir", "out", "--", "nope.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["dlkit-prof run: error: no such script: nope.py"]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_html_screenshot_in_headless_chromium(profiled, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed (make system-deps installs it)")
    _, out = profiled
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                    "--hide-scrollbars", "--window-size=1200,3000", f"--screenshot={shot}",
                    (out / "mnist_classify.report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[:2] == (3000, 1200)
    # Coloured plot bars: pixels that are neither grey text nor white page (plots are the only colour
    # besides the two light section backgrounds, which are excluded by the saturation threshold).
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert (saturation > 0.4).mean() > 0.005, "no plot colours in the screenshot"
    assert pixels.std() > 0.1


@pytest.mark.slow
def test_sweep_local_knee_and_advice(local_sweep):
    proc, out = local_sweep
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = pd.read_csv(out / "sweep.csv")
    assert set(results["workers"]) >= {0, 1} and (results["status"] == "ok").all()
    assert (results["images_per_sec"] > 0).all()
    assert (results["compute_ms"] > 0).all() and (results["wait_ms"] >= 0).all()  # the loop's own times per setting
    summary = json.loads((out / "sweep.json").read_text())
    assert summary["knee"] in set(results["workers"]) and summary["advice"] is not None
    assert mpimg.imread(out / "sweep.png")[..., :3].std() > 0.05
    assert "knee: num_workers=" in proc.stdout and "model advice: num_workers=" in proc.stdout
    assert list((out / "profile").glob("*.lprof"))


@pytest.mark.slow
def test_compare_two_real_profiles(profiled, local_sweep, python_exe, repo, workdir):
    before = profiled[1] / "mnist_classify.lprof"
    after = next((local_sweep[1] / "profile").glob("*.lprof"))
    proc = prof_cli(python_exe, repo, "compare", str(before), str(after), "--output-dir", "cmp", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "overall" in proc.stdout and "data_wait" in proc.stdout and "x" in proc.stdout
    table = pd.read_csv(workdir / "cmp" / "mnist_classify_vs_mnist_classify.compare.csv")
    assert table["phase"].iloc[-1] == "overall" and table["speedup"].iloc[-1] > 0
    assert (workdir / "cmp" / "mnist_classify_vs_mnist_classify.compare.png").stat().st_size > 1000


def test_compare_bad_input_is_one_line_exit_2(tmp_path, python_exe, repo):
    (tmp_path / "junk.lprof").write_bytes(b"not a pickle")
    proc = prof_cli(python_exe, repo, "compare", "junk.lprof", "missing.lprof", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.slurm
def test_sweep_through_slurm(slurm, profiled, python_exe, repo, workdir):
    """`python -m jobs submit sweep`: one real job per setting, with the sweep's own settings and files; a
    setting no node can hold is reported, not hung on; the profile's advice is set beside the knee."""
    out = workdir / "sweep_slurm"
    site = workdir / "sweep-site.env"
    site.write_text("export SBATCH_PARTITION=debug\n")
    proc = subprocess.run([python_exe, "-m", "jobs", "submit", "sweep", "--script", str(repo / "mnist_classify.py"),
                           "--workers", "0,64", "--gpus", "0", "--time-min", "5",
                           "--lprof", str(profiled[1] / "mnist_classify.lprof"), "--folder", str(out), "--",
                           *TINY, "--max-steps", "2", "--data-dir", str(workdir / "data")],
                          cwd=workdir, env={**os.environ, "DLKIT_SITE_ENV": str(site)}, capture_output=True,
                          text=True, timeout=420)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 64 workers cannot be submitted here
    results = pd.read_csv(out / "sweep.csv").set_index("workers")
    assert results.loc[0, "status"] == "ok" and results.loc[0, "images_per_sec"] > 0
    assert results.loc[0, "cpus"] == 1 and results.loc[0, "detail"].startswith("job ")
    assert results.loc[64, "status"] == "failed" and "could not submit" in results.loc[64, "detail"]
    assert "dljobs submit: job failed: could not submit" in proc.stderr
    assert "model advice: num_workers=" in proc.stdout and "advice of" in proc.stdout
    metrics = json.loads((out / "w0" / "metrics.json").read_text())
    assert metrics["settings"]["slurm_job_id"] and metrics["settings"]["cpus_allowed"] == 1


@pytest.mark.slurm
def test_sweep_job_that_fails_names_the_scripts_own_error_line(slurm, python_exe, repo, tmp_path):
    """A setting whose job ran and failed: its row quotes the script's `error:` line, Slurm's state and the log."""
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nprint('broken.py: error: the data folder is empty', file=sys.stderr)\nsys.exit(2)\n")
    site = tmp_path / "site.env"
    site.write_text("export SBATCH_PARTITION=debug\n")
    proc = subprocess.run([python_exe, "-m", "jobs", "submit", "sweep", "--script", str(broken), "--workers", "0",
                           "--gpus", "0", "--time-min", "5", "--folder", str(tmp_path / "out")],
                          cwd=tmp_path, env={**os.environ, "DLKIT_SITE_ENV": str(site)}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    detail = pd.read_csv(tmp_path / "out" / "sweep.csv").set_index("workers").loc[0, "detail"]
    assert detail.startswith("job ") and " FAILED: broken.py: error: the data folder is empty (log: " in detail
    assert "Traceback" not in proc.stderr
