"""Per-epoch TensorBoard curves for the lesson scripts (--tensorboard DIR).

One point per epoch and tag, written with torch.utils.tensorboard: the mean training loss, the
test loss and accuracy, the training speed in images/s and the share of the epoch spent waiting
for data. Open them with `tensorboard --logdir DIR` (lesson 08 shows how from a cluster).
The folder is checked before training starts, so a typo costs seconds, not a whole run.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

TAGS = ("loss/train", "loss/test", "accuracy/test", "speed/images_per_s", "speed/data_wait_share")


class TensorBoardDirError(ValueError):
    """The folder cannot hold event files: the caller prints this one line and exits 2."""


def check_dir(path: Path) -> Path:
    """Create the folder if needed and prove it is writable, or raise TensorBoardDirError."""
    if path.exists() and not path.is_dir():
        raise TensorBoardDirError(f"--tensorboard {path} is a file; give a folder for the event files")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise TensorBoardDirError(f"--tensorboard {path}: cannot write there ({exc.strerror or exc})") from None
    return path


class EpochWriter:
    """Writes the TAGS once per epoch; step = epoch number."""

    def __init__(self, path: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise TensorBoardDirError("--tensorboard needs the tensorboard package: pip install tensorboard") from None
        self.writer = SummaryWriter(log_dir=str(path))

    def epoch(self, epoch: int, stats: dict, test_loss: float, accuracy: float) -> None:
        """stats: what mnist_classify.train() returns (loss, images, seconds, data_wait_seconds)."""
        seconds = stats["seconds"] or float("nan")
        values = (stats.get("loss", float("nan")), test_loss, accuracy, stats["images"] / seconds,
                  stats["data_wait_seconds"] / seconds)
        for tag, value in zip(TAGS, values):
            self.writer.add_scalar(tag, value, epoch)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
