"""Checkpoint files: what they hold, how they are written safely, how the newest good one is found.

A checkpoint is two files in the checkpoint directory:

* ``ckpt-<global step, 9 digits>.pt``: a plain ``torch.save`` dictionary (model, optimizer,
  scheduler, RNG states of every rank, epoch, step within the epoch, ...). It loads with
  ``torch.load(path, weights_only=True)``: only tensors and plain Python values are inside.
* ``ckpt-<...>.json``: a small manifest with the byte size and SHA-256 of the ``.pt`` file.

Both are written atomically (temporary file, flush, fsync, rename, fsync of the directory), the
``.pt`` first. A checkpoint counts only when its manifest exists and the hash matches, so a
process killed at any moment (even ``kill -9`` in the middle of a write) leaves the previous
checkpoint as the newest valid one. A damaged newest checkpoint is skipped with a warning.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMAT = "slurm-dl-kit/checkpoint-v1"
_NAME = re.compile(r"^ckpt-(\d{9})\.pt$")
# Test-only: seconds to sleep half-way through writing a checkpoint, so a test can kill -9 the
# process while the temporary file is incomplete.
SLOW_SAVE_ENV = "SDLK_TEST_SLOW_SAVE"
_CHUNK = 1 << 20


def capture_rng(device: torch.device) -> dict[str, Any]:
    """This process's random states, as tensors and plain values (safe for weights_only loads)."""
    np_kind, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    state: dict[str, Any] = {
        "torch_cpu": torch.get_rng_state(),
        "numpy": {
            "kind": str(np_kind),
            "keys": torch.from_numpy(np.asarray(np_keys, dtype=np.int64)),
            "pos": int(np_pos),
            "has_gauss": int(np_has_gauss),
            "cached_gaussian": float(np_gauss),
        },
        "python": _python_state_to_plain(random.getstate()),
    }
    if device.type == "cuda":
        state["torch_cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch_cpu"])
    np_state = state["numpy"]
    np.random.set_state(
        (
            np_state["kind"],
            np_state["keys"].numpy().astype(np.uint32),
            np_state["pos"],
            np_state["has_gauss"],
            np_state["cached_gaussian"],
        )
    )
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    if device.type == "cuda" and "torch_cuda" in state:
        torch.cuda.set_rng_state(state["torch_cuda"], device)


def _python_state_to_plain(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def checkpoint_path(directory: Path, global_step: int) -> Path:
    return Path(directory) / f"ckpt-{global_step:09d}.pt"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(path: Path, payload: bytes) -> None:
    """Write bytes so that ``path`` is either the old file, absent, or complete: never partial."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    slow = float(os.environ.get(SLOW_SAVE_ENV, "0") or 0)
    with open(tmp, "wb") as handle:
        for offset in range(0, len(payload), _CHUNK):
            handle.write(payload[offset : offset + _CHUNK])
            if slow and offset == 0:
                handle.flush()
                time.sleep(slow)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def save(state: dict[str, Any], directory: Path, global_step: int) -> Path:
    """Write one checkpoint (the .pt, then its manifest) and return the .pt path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, **state}, buffer)
    payload = buffer.getvalue()
    path = checkpoint_path(directory, global_step)
    _atomic_write(path, payload)
    manifest = {
        "format": FORMAT,
        "file": path.name,
        "bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "epoch": state.get("epoch"),
        "step_in_epoch": state.get("step_in_epoch"),
        "global_step": global_step,
        "written_at": time.time(),
    }
    _atomic_write(path.with_suffix(".json"), json.dumps(manifest, indent=1).encode())
    return path


def list_checkpoints(directory: Path) -> list[Path]:
    """Checkpoint files in the directory, newest (highest global step) first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if _NAME.match(p.name)]
    return sorted(found, key=lambda p: p.name, reverse=True)


def verify(path: Path) -> str | None:
    """Why ``path`` is not a usable checkpoint, or None when its manifest vouches for it."""
    manifest_path = path.with_suffix(".json")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as exc:
        return f"no readable manifest {manifest_path.name} ({exc.__class__.__name__})"
    try:
        payload = path.read_bytes()
    except OSError as exc:
        return f"cannot read it ({exc})"
    if len(payload) != manifest.get("bytes"):
        return f"size {len(payload)} != {manifest.get('bytes')} in the manifest"
    if hashlib.sha256(payload).hexdigest() != manifest.get("sha256"):
        return "SHA-256 does not match the manifest"
    return None


def load(path: Path) -> dict[str, Any]:
    """Load a checkpoint onto the CPU with torch's safe (weights-only) unpickler."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} checkpoint")
    return state


def find_latest_valid(directory: Path) -> Path | None:
    """The newest checkpoint that passes ``verify``; each skipped one is named in a warning."""
    for path in list_checkpoints(directory):
        problem = verify(path)
        if problem is None:
            return path
        warnings.warn(f"skipping damaged checkpoint {path}: {problem}", stacklevel=2)
    return None


def remove_stale(directory: Path, keep: int) -> None:
    """Delete leftovers of killed writes and all but the ``keep`` newest checkpoints."""
    directory = Path(directory)
    if not directory.is_dir():
        return
    for tmp in directory.glob(".ckpt-*.tmp-*"):
        tmp.unlink(missing_ok=True)
    for old in list_checkpoints(directory)[keep:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".json").unlink(missing_ok=True)
