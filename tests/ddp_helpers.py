"""Helpers for the multi_gpu tests: tiny run arguments and a process we can watch and signal."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "multi_gpu" / "mnist_ddp.py"
TRAIN_SAMPLES, TEST_SAMPLES = 256, 128


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """One generated digit set for all the DDP tests (the first run writes it, under a lock)."""
    return tmp_path_factory.mktemp("ddp-data")


def small_args(data_dir: Path, epochs: int = 2, batch_size: int = 16, workers: int = 0) -> list[str]:
    """256 generated images, batch 16: 16 steps an epoch, so a run is mostly torch's import."""
    return ["--synthetic", "--data-dir", str(data_dir), "--train-samples", str(TRAIN_SAMPLES),
            "--test-samples", str(TEST_SAMPLES), "--batch-size", str(batch_size),
            "--epochs", str(epochs), "--num-workers", str(workers), "--log-interval", "1000",
            "--device", "cpu"]


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment minus launcher variables, so each test picks its own launcher."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SLURM_") and k not in {"RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                        "MASTER_ADDR", "MASTER_PORT"}}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra or {})
    return env


class Proc:
    """A child in its own process group whose merged output is collected line by line."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.popen = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def _until(self, found, what: str, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = found()
            if result:
                return result
            if self.popen.poll() is not None and not self._reader.is_alive():
                raise AssertionError(f"process ended (rc={self.popen.returncode}) before {what}:\n"
                                     + self.output[-3000:])
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}:\n" + self.output[-3000:])

    def wait_for_text(self, needle: str, timeout: float = 120, count: int = 1) -> None:
        self._until(lambda: self.output.count(needle) >= count, repr(needle), timeout)

    def wait_for_path(self, path: Path, timeout: float = 120) -> Path:
        return self._until(lambda: path if path.exists() else None, str(path), timeout)

    def wait_for_glob(self, folder: Path, pattern: str, timeout: float = 120) -> Path:
        return self._until(lambda: next(iter(folder.glob(pattern)), None), pattern, timeout)

    def finish(self, timeout: float = 180) -> tuple[int, str]:
        try:
            rc = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            rc = self.popen.wait()
        self._reader.join(timeout=10)
        return rc, self.output
