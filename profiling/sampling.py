"""Sample a running job's CPU and GPU use about once a second.

Why: a line profile says *where* the main process spent its time, not whether the GPU was busy or how many cores the
workers kept busy. CPU use comes from /proc (the whole process tree, forked workers included), GPU use from NVML.
"""
from __future__ import annotations

import math
import os
import threading
import time
from contextlib import suppress
from pathlib import Path

from profiling.facts import cpus_from_env

SAMPLE_COLUMNS: tuple[str, ...] = ("time_s", "device", "util_pct", "mem_used_mib", "cores_busy")  # device: cpu, gpu<N>

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _proc_stat(pid: int) -> tuple[int, float, int] | None:
    """(parent pid, CPU seconds incl. reaped children, RSS MiB) of one process, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            raw = fh.read()
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            rss_pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    fields = raw[raw.rfind(")") + 2:].split()  # the command name may hold spaces or parentheses: split after its ')'
    # utime, stime, cutime, cstime: the last two hold children already reaped (workers that exited after an epoch).
    return int(fields[1]), sum(int(x) for x in fields[11:15]) / _TICKS, rss_pages * _PAGE_MIB


def process_tree_usage(root: int) -> tuple[float, float]:
    """(CPU seconds, RSS MiB) summed over `root` and all its live descendants."""
    stats = {int(entry): st for entry in os.listdir("/proc") if entry.isdigit() and (st := _proc_stat(int(entry)))}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    tree = [root] if root in stats else []
    for pid in tree:  # the list grows as it is read: every descendant in turn
        tree += children.get(pid, [])
    return math.fsum(stats[pid][1] for pid in tree), math.fsum(stats[pid][2] for pid in tree)


def _visible_gpu_handles(nvml) -> list[tuple[int, object]]:
    """NVML handles of the GPUs this job sees (CUDA_VISIBLE_DEVICES when set, else all)."""
    count = nvml.nvmlDeviceGetCount()
    handles = []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", ",".join(map(str, range(count))))
    for item in (v.strip() for v in visible.split(",") if v.strip()):
        if item.isdigit() and int(item) < count:
            handles.append((int(item), nvml.nvmlDeviceGetHandleByIndex(int(item))))
        elif item.startswith(("GPU-", "MIG-")):
            handle = nvml.nvmlDeviceGetHandleByUUID(item)
            handles.append((nvml.nvmlDeviceGetIndex(handle), handle))
    return handles


class Sampler:
    """A thread sampling a process tree (and the GPUs) every `interval` s, as a context manager around the child."""

    def __init__(self, root_pid: int, interval: float = 1.0) -> None:
        self.root_pid, self.interval = root_pid, interval
        self.rows: list[tuple] = []
        self.message = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="profiling-sampler", daemon=True)
        self._nvml = None
        self._gpus: list[tuple[int, object]] = []
        try:
            import pynvml  # nvidia-ml-py

            pynvml.nvmlInit()
            self._gpus = _visible_gpu_handles(pynvml)
            self._nvml = pynvml
        except Exception as exc:  # NVMLError (no driver/GPU), missing library, bad UUID...
            self.message = (f"GPU sampling off: no NVIDIA GPU/driver reachable through NVML ({exc}); "
                            "CPU sampling goes on")
        if self._nvml is not None and not self._gpus:
            self.message = "GPU sampling off: NVML sees no GPU visible to this job; CPU sampling goes on"

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5 * self.interval + 1)
        if self._nvml is not None:
            with suppress(Exception):
                self._nvml.nvmlShutdown()

    def _loop(self) -> None:
        cpus = cpus_from_env(os.environ, len(os.sched_getaffinity(0)))[0] or 1
        t0 = time.monotonic()
        last_t, last_cpu = t0, process_tree_usage(self.root_pid)[0]
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            cpu_s, rss = process_tree_usage(self.root_pid)
            busy = max(cpu_s - last_cpu, 0.0) / max(now - last_t, 1e-6)
            last_t, last_cpu = now, cpu_s
            self.rows.append((now - t0, "cpu", 100.0 * busy / cpus, rss, busy))
            for index, handle in self._gpus:
                try:
                    util = float(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                    mem = float(self._nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20)
                except Exception:  # a GPU fell off the bus or the driver went away mid-run
                    util = mem = float("nan")
                self.rows.append((now - t0, f"gpu{index}", util, mem, float("nan")))

    def write(self, path: Path) -> Path:
        """The samples as CSV, one row per time and device (pandas only now: `run` imports this before the script)."""
        import pandas as pd

        pd.DataFrame(self.rows, columns=list(SAMPLE_COLUMNS)).to_csv(path, index=False, float_format="%.3f")
        return path
