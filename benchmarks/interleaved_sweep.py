"""A num_workers sweep in one process, whose settings take turns epoch by epoch.

Why: in `profiling sweep` each run is its own process, and on the GPU nodes three runs of one setting
differed by 8-45 % (docs/results.md, "how far runs of one setting differ"); a run was slow or fast as a
whole, its epochs moving together. With three repeats no such sweep can tell a 5 % difference. Here the
data set, the model and the CUDA context are made once. Each epoch builds a fresh DataLoader with k
workers, as the lesson scripts do (persistent_workers off: the workers start with the epoch, as in the
sweep's runs), with every thread of the process, and so its workers, held to the CPUs the kit's rule
gives k (`cpus_for_workers`, the first CPUs of the machine: what the sweep pins a run to). The settings
take turns in an order rotated each pass; the first pass warms up and is not counted. A setting's time is
the median of its passes; its paired ratio is the median, over passes, of its epoch against the best
setting's epoch of the same pass, which takes out what drifts from pass to pass.

What it found (docs/results.md, "Advice v2 on an interleaved sweep"): taking turns did not make one
setting steadier. Its epochs still spread by 3-43 % on H100s and an H200; what moves a whole pass
explained 14-61 % of that, the rest changed from epoch to epoch. The noise is not the process's.

`--advice NAME=PATH.lprof` reads the advice of a kernprof profile (`profiling run`, with or without
`--paced`) and adds its k to the settings, so each rule is judged on a swept point:

    python -m profiling run --output-dir /tmp/p -- mnist_classify.py --synthetic --num-workers 1
    python benchmarks/interleaved_sweep.py --out /tmp/isw --workers 2,4,6,8,12 --passes 6 \\
        --advice "margin 2=/tmp/p/mnist_classify.lprof" -- mnist_classify.py --synthetic
    python benchmarks/interleaved_sweep.py --out /tmp/isw-sf --workers 4,8,12 -- \\
        small_files/train.py --data data/small-files-8000/train --no-test

Only the kit's own two scripts (mnist_classify.py, small_files/train.py) can be swept this way: the sweep
builds their loaders itself. Any other script is swept by `python -m profiling sweep`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import pandas as pd

from jobs.gather import parse_workers
from mnist_classify import positive_int
from profiling.cpu_rule import cpus_for_workers, first_cpus
from profiling.sweep import KNEE_TOLERANCE, knee_of_times

WITHIN = 1 + KNEE_TOLERANCE  # a rule's goal: its epoch within 5 % of the best (the knee: knee_of_times)
SCRIPTS = ("mnist_classify.py", "small_files/train.py")


def is_kit_script(path: str) -> bool:
    """mnist_classify.py or small_files/train.py, wherever the checkout is."""
    parts = Path(path).parts
    return any(tuple(Path(script).parts) == parts[-len(Path(script).parts):] for script in SCRIPTS)


def worker_list(text: str) -> list[int]:
    """"2,4,8" -> [2, 4, 8], read as `profiling sweep` and the job tools read it; else argparse's
    one-line error."""
    try:
        return sorted(set(parse_workers(text)))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for epochs.csv and summary.{md,json}")
    p.add_argument("--workers", type=worker_list, default=worker_list("2,4,6,8,12"), help="worker counts")
    p.add_argument("--passes", type=positive_int, default=5,
                   help="epochs per setting, settings taking turns; the first pass is warm-up (default 5)")
    p.add_argument("--advice", action="append", default=[], metavar="NAME=LPROF",
                   help="judge the num_workers that this profile's report advises (may be repeated)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- mnist_classify.py|small_files/train.py [ARGS...]")
    args = p.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command or not is_kit_script(args.command[0]):
        p.error(f"give one of {', '.join(SCRIPTS)} and its arguments after --")
    if args.passes < 2:
        p.error("--passes: at least 2 (the first is warm-up)")
    args.advised = {}
    for item in args.advice:
        name, _, path = item.partition("=")
        if not name or not Path(path).is_file():
            p.error(f"--advice {item!r}: expected NAME=PATH to a .lprof file")
        args.advised[name] = advised_workers(Path(path))
    args.workers = sorted(set(args.workers) | set(args.advised.values()))
    return args


def advised_workers(lprof: Path) -> int:
    """The num_workers that `profiling report` gives this profile (its curve beside it, if any)."""
    from profiling.report import build_report

    return build_report(lprof).advice.num_workers


class Workload:
    """One of the kit's scripts, set up once: its parsed flags, device, model, optimizer, and a way
    to build its training loader for k workers."""

    def __init__(self, command: list[str]) -> None:
        import torch

        import mnist_classify as lesson1
        from digits import recipes
        from digits.data import load_datasets
        from small_files import train as image_train

        self.image = Path(command[0]).as_posix().endswith(SCRIPTS[1])
        parser = image_train.build_parser() if self.image else lesson1.build_parser()
        self.args = parser.parse_args(command[1:])
        self.args.log_interval = 10 ** 9  # no per-10-step loss.item() sync: the same for every setting
        self.device = lesson1.resolve_device(self.args.device)
        torch.manual_seed(self.args.seed)
        if self.image:
            self.args.no_test = True
            loader, _, classes = image_train.make_loaders(self.args, self.device)
            self.model = image_train.resnet18(classes).to(self.device)
            self.optimizer = image_train.make_optimizer(self.args, self.model)
        else:
            self.datasets = load_datasets(self.args)
            self.model = lesson1.Net().to(self.device)
            self.optimizer = recipes.build(self.args, self.model.parameters(), 1, self.device).optimizer
        self.gpus = int(self.device.type == "cuda")
        self.machine = set(os.sched_getaffinity(0))  # before any hold: what each setting takes its first CPUs of

    def loader(self, workers: int):
        import mnist_classify as lesson1
        from small_files import train as image_train

        self.args.num_workers = workers
        if self.image:
            return image_train.make_loaders(self.args, self.device)[0]
        return lesson1.make_loaders(self.args, *self.datasets, self.device)[0]

    def epoch(self, workers: int, number: int) -> dict:
        """One timed epoch at `workers`, the process held to the CPUs the kit's rule gives them, and torch's
        pool sized to them, as torch sizes it in a fresh process with that mask (a pool larger than its
        mask made one CPU run 5x slower here)."""
        import torch

        import mnist_classify as lesson1

        cpus = first_cpus(cpus_for_workers(workers, self.gpus), self.machine)
        hold(cpus)
        torch.set_num_threads(len(cpus))
        loader = self.loader(workers)
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            stats = lesson1.train(self.args, self.model, self.device, loader, self.optimizer, number)
        return {"workers": workers, "cpus": len(cpus), "seconds": stats["seconds"], "images": stats["images"],
                "data_wait_s": stats["data_wait_seconds"]}


def hold(cpus: set[int]) -> None:
    """Every thread of this process (torch's pool, CUDA's, the loop's) on `cpus`; workers forked next
    inherit the main thread's mask."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


def rotated(settings: list[int], turn: int) -> list[int]:
    """The settings starting at a different one each pass, so none is always first or last."""
    start = turn % len(settings)
    return settings[start:] + settings[:start]


def summarise(epochs: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """Per setting over the counted passes (all but the first): median, fastest and slowest epoch, their
    spread, and the paired ratio against the best setting of each pass; then the best and the knee."""
    counted = epochs[epochs["pass"] > 0]
    table = counted.groupby("workers")["seconds"].agg(["median", "min", "max", "count"])
    table["spread"] = table["max"] / table["min"]
    best = int(table["median"].idxmin())
    per_pass = counted.pivot_table(index="pass", columns="workers", values="seconds")
    table["paired_ratio"] = per_pass.div(per_pass[best], axis=0).median()
    table["ratio"] = table["median"] / table.loc[best, "median"]
    knee = knee_of_times({int(k): float(s) for k, s in table["median"].items()})
    return table, best, int(knee)


def render(args: argparse.Namespace, table: pd.DataFrame, best: int, knee: int, gpus: int,
           about: str) -> tuple[str, dict]:
    """summary.md's text (the table, the best, the knee, each rule's verdict) and summary.json's content."""
    judged = {name: {"workers": k, "ratio": round(float(table.loc[k, "ratio"]), 3),
                     "paired_ratio": round(float(table.loc[k, "paired_ratio"]), 3),
                     "within_5pct": bool(table.loc[k, "ratio"] <= WITHIN), "at_most_knee_plus_2": k <= knee + 2}
              for name, k in args.advised.items()}
    lines = [f"# Interleaved sweep: {about}", "", f"`{' '.join(args.command)}`, {args.passes} passes "
             f"(the first not counted), settings {args.workers}", "",
             "| num_workers | CPUs | median epoch s | fastest | slowest | spread | vs best | paired vs best |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w, row in table.iterrows():
        lines.append(f"| {w} | {cpus_for_workers(int(w), gpus)} | {row['median']:.3f} | {row['min']:.3f} | "
                     f"{row['max']:.3f} | {row['spread']:.3f} | {row['ratio']:.3f}x | {row['paired_ratio']:.3f}x |")
    lines += ["", f"best: {best} workers; knee (fewest within 5 % of the best): {knee}", ""]
    for name, j in judged.items():
        lines.append(f"- {name}: {j['workers']} workers, {j['ratio']:.3f}x the best (paired {j['paired_ratio']:.3f}x): "
                     f"within 5 % {'MET' if j['within_5pct'] else 'NOT MET'}; at most knee + 2 "
                     f"{'MET' if j['at_most_knee_plus_2'] else 'NOT MET'}")
    summary = {"about": about, "command": args.command, "passes": args.passes, "best": best, "knee": knee,
               "rules": judged, "table": json.loads(table.reset_index().to_json(orient="records"))}
    return "\n".join(lines) + "\n", summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    from digits.data import SetupError

    try:
        work = Workload(args.command)
    except SetupError as exc:
        print(f"interleaved_sweep: error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for turn in range(args.passes):
        for k in rotated(args.workers, turn):
            row = {"pass": turn, **work.epoch(k, turn + 1)}
            rows.append(row)
            print(f"pass {turn} k={k}: {row['seconds']:.3f} s (wait {row['data_wait_s']:.3f} s)", flush=True)
            pd.DataFrame(rows).to_csv(args.out / "epochs.csv", index=False)  # kept as it goes
    hold(work.machine)
    table, best, knee = summarise(pd.DataFrame(rows))
    gpu = torch.cuda.get_device_name(0) if work.gpus else "no GPU"
    about = f"{work.gpus} GPU ({gpu}), {len(work.machine)} CPUs, torch {torch.__version__}"
    text, summary = render(args, table, best, knee, work.gpus, about)
    (args.out / "summary.md").write_text(text, encoding="utf-8")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
