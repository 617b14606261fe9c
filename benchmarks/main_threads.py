"""Does the training process's own thread count slow its loop as workers are added?

torch sizes its intra-op pool to every CPU the process may use. In a job of W workers + 2 CPUs the
workers keep W of them busy, yet the training process (and its pin-memory thread, whose copy of each
batch is split over that pool) still starts W + 2 threads, which then wait on one another. This runs
the same `profiling sweep` settings with the pool left at torch's default and held to the main
process's share (`OMP_NUM_THREADS` = CPUs - workers), pass after pass so both see the same machine.

    python benchmarks/main_threads.py --out /tmp/mt --workers 6,8,12,14 --rounds 3 -- \
        image_classify.py --data data/small-files-8000/train --no-test --epochs 2
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mnist_classify import positive_int  # noqa: E402
from profiling.cpu_rule import main_process_cpus  # noqa: E402

MODES = ("default", "share")  # torch's own pool size; OMP_NUM_THREADS = the main process's CPUs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="one sweep folder per round and mode, and summary.md")
    p.add_argument("--workers", default="6,8,12,14", help="worker counts, as for `profiling sweep`")
    p.add_argument("--rounds", type=positive_int, default=3, help="passes of both modes (one sweep repeat each)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...], as for `profiling sweep`")
    args = p.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:
        p.error("give the training script after --")
    return args


def mode_env(mode: str, gpus: int) -> dict[str, str]:
    """The environment of one mode: `share` holds the pool to the main process's CPUs (the sweep pins
    each setting to W + that many); `default` leaves torch to size it to every CPU it may use."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if mode == "share":
        env["OMP_NUM_THREADS"] = str(main_process_cpus(gpus))
    return env


def pool_size(env: dict[str, str]) -> int:
    """torch.get_num_threads() in a fresh process with this environment (proof the mode took effect)."""
    probe = [sys.executable, "-c", "import torch; print(torch.get_num_threads())"]
    return int(subprocess.run(probe, env=env, check=True, capture_output=True, text=True).stdout)


def sweep(args: argparse.Namespace, mode: str, folder: Path, lprof: Path | None) -> pd.DataFrame:
    """One `profiling sweep` pass in one mode. The first pass profiles the script once (the sweep
    adds the advised k to the settings); the others reuse that profile."""
    cmd = [sys.executable, "-m", "profiling", "sweep", "--workers", args.workers, "--repeats", "1",
           "--output-dir", str(folder), *(["--lprof", str(lprof)] if lprof else []), "--", *args.command]
    subprocess.run(cmd, cwd=REPO, env=mode_env(mode, args.gpus), check=True, stdout=subprocess.DEVNULL)
    return pd.read_csv(folder / "sweep.csv").assign(mode=mode)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    args.gpus = 1 if torch.cuda.is_available() else 0
    first = args.out / f"round1-{MODES[0]}"
    try:
        runs = [sweep(args, MODES[0], first, None)]
        lprof = next(iter(sorted((first / "profile").glob("*.lprof"))), None)
        runs += [sweep(args, mode, args.out / f"round{r}-{mode}", lprof)
                 for r in range(1, args.rounds + 1) for mode in MODES if (r, mode) != (1, MODES[0])]
    except (subprocess.CalledProcessError, FileNotFoundError) as err:  # the sweep printed why; keep what ran
        print(f"main_threads: a sweep failed ({err}); finished passes are under {args.out}", file=sys.stderr)
        return 1
    runs = pd.concat(runs, ignore_index=True)
    runs.to_csv(args.out / "runs.csv", index=False)
    table = runs.groupby(["workers", "mode"])[["epoch_seconds", "compute_ms", "wait_ms"]].median().unstack("mode")
    best = table["epoch_seconds"].min().min()
    lines = [f"# main-process threads: {' '.join(args.command)}", "",
             f"median of {args.rounds} rounds; epoch s (vs the best of both), loop compute and wait ms per batch; "
             f"pool: default {pool_size(mode_env('default', args.gpus))} threads here (unpinned), "
             f"share {pool_size(mode_env('share', args.gpus))}", "",
             "| workers | epoch s, default | epoch s, share | compute ms, default | compute ms, share |"
             " wait ms, default | wait ms, share |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for w, row in table.iterrows():
        d, s = row[("epoch_seconds", "default")], row[("epoch_seconds", "share")]
        lines.append(f"| {w} | {d:.2f} ({d / best:.3f}x) | {s:.2f} ({s / best:.3f}x) | "
                     f"{row[('compute_ms', 'default')]:.2f} | {row[('compute_ms', 'share')]:.2f} | "
                     f"{row[('wait_ms', 'default')]:.2f} | {row[('wait_ms', 'share')]:.2f} |")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
