"""Share one GPU between processes: run jobs side by side, under CUDA MPS or not, and watch the GPU.

Lesson 10's two measurements (benchmarks/gpu_sharing.py) need the same four pieces:

* ``cpu_shares``: each job gets its own slice of the CPUs, as Slurm would give each task its own;
* ``MpsDaemon``: a private CUDA MPS control daemon (pipe and log folders in a temporary folder),
  stopped with ``quit`` when the block ends, on an error or a signal too. Without MPS the kernels
  of different processes take turns on the GPU (time slicing); under MPS they run at once, and
  ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` caps the share of the GPU's SMs one client may use;
* ``GpuSampler``: GPU utilisation sampled through NVML (nvidia-ml-py) while the jobs run;
* ``run_together``: start every job, wait for all, stop the rest if one fails or on Ctrl-C.

The arithmetic on the results (``window_rate``, ``overlap``) is pure, so it is tested on CPU.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType

MPS_CONTROL = "nvidia-cuda-mps-control"


def cpu_shares(jobs: int, cpus: list[int] | None = None) -> list[list[int]]:
    """Split the CPUs this process may use into `jobs` even slices (shared round robin when there
    are fewer CPUs than jobs)."""
    cpus = sorted(os.sched_getaffinity(0)) if cpus is None else cpus
    if jobs <= len(cpus):
        size = len(cpus) // jobs
        return [cpus[i * size:(i + 1) * size] for i in range(jobs)]
    return [[cpus[i % len(cpus)]] for i in range(jobs)]


def mps_problem() -> str | None:
    """Why MPS cannot be used here, or None when it can."""
    if shutil.which(MPS_CONTROL) is None:
        return f"{MPS_CONTROL} is not on PATH"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible"
    return None


class MpsDaemon:
    """A private MPS daemon for the jobs started inside the block (they need ``env``)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="mps-"))
        self.env = {"CUDA_MPS_PIPE_DIRECTORY": str(self.folder / "pipe"),
                    "CUDA_MPS_LOG_DIRECTORY": str(self.folder / "log")}
        self._old_handlers: dict[int, object] = {}

    def __enter__(self) -> "MpsDaemon":
        for path in self.env.values():
            Path(path).mkdir(parents=True)
        # SIGTERM (a job's time limit, scancel) must reach the finally that stops the daemon
        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, self._raise)
        try:
            subprocess.run([MPS_CONTROL, "-d"], env={**os.environ, **self.env}, check=True, timeout=30)
        except BaseException:
            self.__exit__()
            raise
        return self

    @staticmethod
    def _raise(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    def __exit__(self, *exc: object) -> None:
        try:
            subprocess.run([MPS_CONTROL], input="quit\n", text=True, env={**os.environ, **self.env},
                           timeout=30, check=False)
        finally:
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
            shutil.rmtree(self.folder, ignore_errors=True)


class GpuSampler:
    """Sample GPU utilisation (%) and memory every `interval` s in a thread, through NVML."""

    def __init__(self, gpu: int = 0, interval: float = 0.2) -> None:
        self.samples: list[tuple[float, int, int]] = []  # (time, utilisation %, memory used MiB)
        self.problem: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml, self._handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(gpu)
        except Exception as exc:  # no nvidia-ml-py, no driver, no GPU: the benchmark goes on without
            self.problem = f"GPU utilisation not sampled ({type(exc).__name__}: {exc})"
        self.interval = interval

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            util = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
            memory = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
            self.samples.append((time.time(), int(util.gpu), int(memory.used // 2**20)))

    def __enter__(self) -> "GpuSampler":
        if self.problem is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def mean_utilisation(self, start: float = 0.0, end: float = float("inf")) -> float | None:
        """Mean utilisation % over the samples taken between start and end (wall clock)."""
        inside = [u for t, u, _ in self.samples if start <= t <= end]
        return sum(inside) / len(inside) if inside else None


def run_together(commands: list[list[str]], logs: list[Path], cpus: list[list[int]],
                 env: dict[str, str], job_env: list[dict[str, str]] | None = None) -> list[int]:
    """Start every command at once (each on its CPUs, with its log), wait for all; exit codes.

    If one fails to start or the wait is interrupted, the others are stopped, not left behind."""
    procs: list[subprocess.Popen] = []
    # taskset, not preexec_fn: a child forked while the GPU sampler's thread runs must not run Python
    pin = shutil.which("taskset")
    try:
        for i, (command, log, mine) in enumerate(zip(commands, logs, cpus)):
            with open(log, "w") as out:
                procs.append(subprocess.Popen(
                    ([pin, "-c", ",".join(map(str, mine))] if pin else []) + command,
                    stdout=out, stderr=subprocess.STDOUT,
                    env={**os.environ, **env, **((job_env or [{}] * len(commands))[i])}))
        return [p.wait() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()


def window_rate(step_ends: list[float], batch: int, start: float, end: float) -> float | None:
    """Images/s of a job that recorded each step's end, counted inside [start, end] only (the time
    another job was running beside it)."""
    if end <= start:
        return None
    inside = sum(1 for t in step_ends if start < t <= end)
    return inside * batch / (end - start)


def overlap(windows: list[tuple[float, float]]) -> float:
    """Share of the average job's time during which every job was running (1.0: all at once)."""
    common = min(e for _, e in windows) - max(s for s, _ in windows)
    mean = sum(e - s for s, e in windows) / len(windows)
    return max(common, 0.0) / mean if mean > 0 else 0.0
