"""A job's memory need, measured, never estimated: the kit's own profile, or sacct's MaxRSS.

The memory rule used to compare `--mem` with a rule of thumb (4 GB a process, 1 GB a worker),
and was wrong on exactly the jobs that need memory: a CUDA extension build, a large model's
fine-tune. Now it speaks only from a measurement of the same script:

* a profile the kit wrote (`python -m profiling run --sample-gpu`): its `<stem>.meta.json` names
  the script, and `<stem>.samples.csv` holds the RSS of the whole process tree (workers included);
* an earlier run of the same job in `sacct` (its MaxRSS per task), asked only with
  `dljobs check --sacct`, with a time limit, because a busy accounting database can be slow.
"""
from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

from jobs.facts import Need

MAX_PROFILES = 400          # meta files looked at, at most, so a huge runs/ folder stays fast
SACCT_TIMEOUT_S = 5.0
_RSS = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)$")
_MB = {"": 1 / 1024, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2}  # sacct's bare number is KiB


def _meta_files(folders: list[Path]) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        for pattern in ("*.meta.json", "*/*.meta.json", "*/*/*.meta.json"):
            found.extend(folder.glob(pattern))
            if len(found) >= MAX_PROFILES:
                return found[:MAX_PROFILES]
    return found


def profile_need(script: Path, folders: list[Path], base: Path) -> Need | None:
    """The largest RSS any kit profile of `script` recorded (MiB), or None without one.

    A relative `cwd` in a meta file (the kit writes absolute ones) is taken from `base`."""
    target = script.resolve()
    best: Need | None = None
    for meta_path in _meta_files([f for f in folders if f.is_dir()]):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            argv0 = Path(meta["argv"][0])
            cwd = Path(meta.get("cwd", "."))
            ran = (argv0 if argv0.is_absolute() else (cwd if cwd.is_absolute() else base / cwd) / argv0).resolve()
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        samples = meta_path.with_name(meta_path.name.replace(".meta.json", ".samples.csv"))
        if ran != target or not samples.is_file():
            continue
        try:
            with samples.open(encoding="utf-8") as fh:
                rss = [float(row["mem_used_mib"]) for row in csv.DictReader(fh)
                       if row.get("device") == "cpu" and row.get("mem_used_mib") not in (None, "", "nan")]
        except (OSError, ValueError, KeyError):
            continue
        if rss and (best is None or max(rss) > best.mb):
            best = Need(max(rss), "process", f"the kit's profile {samples}")
    return best


def rss_mb(value: str) -> float | None:
    """sacct's MaxRSS ("123456K", "1.5G", "0") in MiB, or None when empty."""
    match = _RSS.match(value.strip())
    return float(match.group(1)) * _MB[match.group(2)] if match else None


def sacct_need(job_name: str, runner=subprocess.run) -> Need | None:
    """The largest MaxRSS of a completed earlier run of a job with this name, if sacct answers."""
    if shutil.which("sacct") is None:
        return None
    try:
        out = runner(["sacct", "-n", "-P", "--name", job_name, "-S", "now-60days", "-o", "JobID,State,MaxRSS"],
                     capture_output=True, text=True, timeout=SACCT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    best: Need | None = None
    completed = {line.split("|")[0] for line in out.stdout.splitlines() if "|COMPLETED|" in line + "|"}
    for line in out.stdout.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or parts[0].split(".")[0] not in completed:
            continue
        mb = rss_mb(parts[2])
        if mb and (best is None or mb > best.mb):
            best = Need(mb, "task", f"sacct MaxRSS of job {parts[0]}")
    return best
