"""Put the ``--metrics-json`` files of several runs side by side, the first one as the baseline.

    python -m lessons.metrics_table runs/l4/base.json runs/l4/pinned.json

Lesson 4 changes one setting at a time; this table is its before/after evidence. It reads only
the keys of the metrics contract (see mnist_classify.py), so it works for any run of the kit.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd


def load(path: Path) -> dict:
    """One row of the table from one metrics file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    epochs = data.get("epoch_seconds") or [float("nan")]
    return {
        "run": path.stem,
        "images/s": data["images_per_sec"],
        "epoch s": sum(epochs) / len(epochs),
        "data wait s": data.get("data_wait_seconds", float("nan")),
        "test acc %": data.get("test_accuracy", float("nan")),
    }


def table(paths: list[Path]) -> pd.DataFrame:
    """The side-by-side table, with the speed-up of each run over the first."""
    frame = pd.DataFrame([load(p) for p in paths])
    frame["speed-up"] = frame["images/s"] / frame["images/s"].iloc[0]
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lessons.metrics_table", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="metrics JSON files; the first is the baseline")
    args = parser.parse_args(argv)
    try:
        frame = table(args.files)
    except (OSError, ValueError, KeyError) as err:
        print(f"lessons.metrics_table: cannot read the runs: {err}", file=sys.stderr)
        return 2
    formats = {"images/s": "{:.0f}".format, "epoch s": "{:.2f}".format, "data wait s": "{:.2f}".format,
               "test acc %": "{:.1f}".format, "speed-up": "{:.2f}x".format}
    for column, fmt in formats.items():
        frame[column] = frame[column].map(fmt)
    print(frame.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
