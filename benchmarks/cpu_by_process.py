"""Where a node's cores go while a trainer runs: cores busy per kind of process, from /proc.

Why: when a loop waits for its DataLoader workers on a 16-core node, "add workers" only helps if
the cores are not already spent elsewhere: in the main process (its pin-memory thread, the thread
that launches the GPU work), in sshfs and the ssh/sshd pair that carry a network file system's
bytes, or in the workers themselves. This samples every process's CPU time (utime + stime) four
times a second and, for a window (the timed epoch), gives the cores each kind used.

Kinds: `main` is the trainer's own process, `workers` its descendants (the loader's workers), and
the rest go by command name (`sshfs`, `ssh`, `sshd`, else `other`). `node` is the whole machine's
busy cores from /proc/stat, so node minus the kinds is everything else; `main_top_threads` are the
cores of the main process's four busiest threads (one near 1.0 is a serial limit).
"""
from __future__ import annotations

import os
import threading
import time

_TICKS = os.sysconf("SC_CLK_TCK")
KINDS = ("main", "workers", "sshfs", "ssh", "sshd", "other")


def _processes() -> dict[int, tuple[str, int, float]]:
    """pid -> (command name, parent pid, CPU seconds of its own threads)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                raw = fh.read()
        except OSError:
            continue
        name = raw[raw.find("(") + 1:raw.rfind(")")]
        fields = raw[raw.rfind(")") + 2:].split()
        out[int(entry)] = (name, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS)
    return out


def _threads(pid: int) -> dict[int, float]:
    """tid -> CPU seconds of each thread of one process (the pin-memory thread, the launcher, ...)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / _TICKS
    return out


def _node_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all but idle and iowait), summed over cores."""
    with open("/proc/stat", encoding="ascii") as fh:
        values = [int(v) for v in fh.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / _TICKS


def kind_of(pid: int, root: int, procs: dict[int, tuple[str, int, float]]) -> str:
    if pid == root:
        return "main"
    seen, parent = 0, procs[pid][1]
    while parent in procs and seen < 64:
        if parent == root:
            return "workers"
        parent, seen = procs[parent][1], seen + 1
    name = procs[pid][0]
    return name if name in ("sshfs", "ssh", "sshd") else "other"


class CoreSampler:
    """A background thread: snapshots of (wall time, node busy seconds, {pid: (kind, CPU s)})."""

    def __init__(self, root: int, interval: float = 0.25) -> None:
        self.root, self.interval = root, interval
        self.snapshots: list[tuple[float, float, dict[int, tuple[str, float]], dict[int, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _take(self) -> None:
        procs = _processes()
        kinds = {pid: (kind_of(pid, self.root, procs), cpu) for pid, (_, _, cpu) in procs.items()}
        self.snapshots.append((time.time(), _node_busy_seconds(), kinds, _threads(self.root)))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(self.interval)

    def __enter__(self) -> CoreSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def cores(self, start: float, end: float) -> dict[str, float]:
        """Mean cores busy per kind between the snapshots nearest to [start, end] (wall clock).

        A process that exited inside the window counts with its last snapshot in it.
        """
        inside = [s for s in self.snapshots if start <= s[0] <= end]
        if len(inside) < 2:
            return {}
        (t0, busy0, first, threads0), (t1, busy1, _, threads1) = inside[0], inside[-1]
        last: dict[int, tuple[str, float]] = {}
        for _, _, kinds, _ in inside:
            last.update(kinds)
        spent = dict.fromkeys(KINDS, 0.0)
        for pid, (kind, cpu) in last.items():
            spent[kind] += cpu - first.get(pid, (kind, 0.0))[1]
        wall = t1 - t0
        busiest = sorted((cpu - threads0.get(tid, 0.0) for tid, cpu in threads1.items()), reverse=True)[:4]
        return {"node": (busy1 - busy0) / wall, **{k: v / wall for k, v in spent.items()},
                "main_top_threads": [round(t / wall, 2) for t in busiest], "window_s": wall,
                "cpus": os.cpu_count() or 0}
