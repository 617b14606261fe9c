"""Evict files from the page cache and ask how much of them is resident, with vmtouch.

A "cold" read must come from the disk (or the network), not from memory that an earlier run
filled. `vmtouch -e` drops a file's cached pages (posix_fadvise DONTNEED underneath); pages not
yet written back cannot be dropped, so we sync first. Only file data is evicted: directory
entries and inodes stay cached (dropping those takes the machine-wide /proc/sys/vm/drop_caches).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path


class CacheToolMissing(RuntimeError):
    """vmtouch is not installed: `make system-deps` (Debian package vmtouch)."""


def _vmtouch(*args: str) -> str:
    exe = shutil.which("vmtouch")
    if exe is None:
        raise CacheToolMissing("vmtouch not found: install Debian's vmtouch (make system-deps)")
    done = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OSError(f"vmtouch {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def evict(*paths: Path) -> str:
    """Drop the cached pages of these files or folders (recursively); return the method used.

    Without vmtouch (a bare GPU node) the same system call is made here, file by file."""
    os.sync()
    if shutil.which("vmtouch") is not None:
        _vmtouch("-q", "-e", *map(str, paths))
        return "vmtouch -e"
    for path in paths:
        for file in ([path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())):
            fd = os.open(file, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return "posix_fadvise(DONTNEED)"


def resident(*paths: Path) -> tuple[int, int]:
    """(resident pages, total pages) of these files or folders, as vmtouch counts them."""
    out = _vmtouch(*map(str, paths))
    match = re.search(r"Resident Pages:\s+(\d+)/(\d+)", out)
    if match is None:
        raise OSError(f"vmtouch printed no 'Resident Pages' line: {out.strip()[:200]}")
    return int(match.group(1)), int(match.group(2))
