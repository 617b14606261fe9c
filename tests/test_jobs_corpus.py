"""The checker on a corpus of users' job scripts and the Python they start (tests/data/job_corpus).

Each job is checked from its own folder, as `sbatch` would be run there, and must give exactly
the findings listed in expected.toml: each expected one, and no other.
"""
from __future__ import annotations

import os
import subprocess
import tomllib
import uuid
from pathlib import Path

import pytest

from jobs.rules import check
from jobs.script import read_script

CORPUS = Path(__file__).resolve().parent / "data" / "job_corpus"
EXPECTED = tomllib.loads((CORPUS / "expected.toml").read_text(encoding="utf-8"))
CORPUS_RULES = {rule for case in EXPECTED.values() for _, rule, _ in case["expected"]}


def test_every_folder_has_expectations():
    folders = {p.parent.name for p in CORPUS.glob("*/job.sbatch")}
    assert folders == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_expected_finding_and_no_other(name, monkeypatch):
    monkeypatch.delenv("DLKIT_RUNS_DIR", raising=False)
    folder = CORPUS / name
    found = check(read_script(folder / "job.sbatch"), root=folder)
    lines = [f.line() for f in found]
    expected = EXPECTED[name]["expected"]
    assert len(found) == len(expected), lines
    for level, rule, fragment in expected:
        assert any(f.level == level and f.rule == rule and fragment in f.message for f in found), (fragment, lines)


def test_unreadable_scripts_are_a_note_and_never_run(tmp_path, python_exe, repo):
    """Missing, broken and binary scripts: a note each, exit 0, no traceback; a script that would
    leave a mark if it ran leaves none."""
    (tmp_path / "marker.py").write_text("import pathlib\npathlib.Path('ran').write_text('x')\n")
    jobs = []
    for name, body in (("missing", "python nowhere.py"), ("syntax", "python bad.py"),
                       ("binary", "python blob.py"), ("runs", "python marker.py")):
        job = tmp_path / f"{name}.sbatch"
        job.write_text(f"#!/bin/bash\n#SBATCH -c 2\n{body}\n")
        jobs.append(str(job))
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02")
    out = subprocess.run([python_exe, "-m", "jobs", "check", *jobs], cwd=tmp_path,
                         env={"PYTHONPATH": str(repo)}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    notes = out.stderr.strip().splitlines()
    assert len(notes) == 3 and all("note[script-not-read]" in line for line in notes), notes
    assert not (tmp_path / "ran").exists()


@pytest.mark.slurm
def test_memory_need_from_sacct_of_an_earlier_run(slurm, tmp_path, python_exe, repo):
    """A real job's MaxRSS in sacct is the measured need; without --sacct the rule stays silent."""
    name = f"memneed-{uuid.uuid4().hex[:10]}"
    job_id = slurm.submit(f"--job-name={name}", "--mem=500M", "--time=2", "-o", str(tmp_path / "out"),
                          "--wrap", "python3 -c 'import time; x = bytearray(60_000_000); time.sleep(3)'",
                          cwd=tmp_path)
    slurm.wait(job_id)
    records = slurm.sacct(job_id)
    assert any(r.get("MaxRSS") for r in records.values()), records
    job = tmp_path / "again.sbatch"
    job.write_text(f"#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH --mem=64G\npython3 -c pass\n")

    def check(*flags):
        return subprocess.run([python_exe, "-m", "jobs", "check", *flags, str(job)], cwd=tmp_path,
                              env={"PYTHONPATH": str(repo), "PATH": os.environ["PATH"]},
                              capture_output=True, text=True, timeout=60)

    assert "mem-far-above-need" not in check().stderr
    out = check("--sacct")
    assert out.returncode == 0 and f"sacct MaxRSS of job {job_id}." in out.stderr, out.stderr
    assert "measured for 1 task(s) on a node" in out.stderr
