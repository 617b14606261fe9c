"""`dlkit-prof sweep`: measure throughput for each num_workers and set the knee beside the advice.

Why a sweep: `run` finds its advice inside one run, worker counts taking turns in the loop; a sweep is the independent
check, each setting a run of its own (any script: `profiling.capture` sets its DataLoaders' workers), pinned to its
workers + the main process's CPUs (profiling.cpu_rule) as a Slurm job with that `--cpus-per-task` would be. The knee
is the fewest workers within 5 % of the best, because every extra worker costs a CPU another job could use.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from profiling import capture
from profiling.argv import strip_flags
from profiling.cpu_rule import cpus_for_workers, first_cpus
from profiling.facts import gpus_from_env, read_environment
from profiling.plots import new_figure
from profiling.precheck import takes_metrics_json

DEFAULT_BATCHES = 200  # batches per setting through the hook: enough for a steady rate, then a clean stop
KNEE_TOLERANCE = 0.05  # "within 5 % of the best"
# compute_ms / wait_ms: the training loop's compute and data wait per batch at that setting (`loop_times`)
RESULT_COLUMNS = ("workers", "cpus", "images_per_sec", "epoch_seconds", "compute_ms", "wait_ms", "status", "detail")


@dataclass(frozen=True)
class Setting:
    """One point of the sweep: the command to run and where its results go."""

    workers: int
    command: list[str]
    metrics: Path   # the script's metrics JSON, or the hook's loaders JSON (`profiling.capture`)
    log: Path
    cpus: int  # --cpus-per-task for these workers: profiling.cpu_rule.cpus_for_workers


def settings_for(command: list[str], workers: list[int], out_dir: Path, gpus: int = 0,
                 batches: int = DEFAULT_BATCHES, repeats: int = 1) -> list[Setting]:
    """One setting per worker count. With `repeats`, pass after pass, each in an order rotated by one so a drift hits
    every count alike (an H100's passes sped up by up to 28 % from first count to last); pass n in `repeatN`."""
    result = []
    own_flags = takes_metrics_json(Path(command[0]))
    script, args = command[0], strip_flags(command[1:], ("--num-workers", "--metrics-json"))
    pin = False if "--no-pin-memory" in args else None
    turns = [(n, w) for n in range(max(repeats, 1)) for w in workers[n % len(workers):] + workers[:n % len(workers)]]
    for n, w in turns:
        folder = ((out_dir / f"repeat{n + 1}" if n else out_dir) / f"w{w}").resolve()
        if own_flags:
            metrics = folder / "metrics.json"
            run = [sys.executable, script, *args, "--num-workers", str(w), "--metrics-json", str(metrics)]
        else:
            metrics = folder / "loaders.json"  # the hook sets the workers on its loaders, stops it after `batches`
            hook = [f"{capture.PATH_VAR}={metrics}", f"{capture.BATCHES_VAR}={batches}", f"{capture.WORKERS_VAR}={w}"]
            run = ["env", *hook, sys.executable, "-m", "profiling.capture", *command]
        result.append(Setting(w, run, metrics, folder / "log.txt", cpus_for_workers(w, gpus, pin)))
    return result


def read_metrics(path: Path) -> tuple[float, float]:
    """(images_per_sec, mean epoch seconds) from the script's metrics JSON, or the busiest loader's samples/s (no epoch
    time). With 2+ epochs the first (warm-up) is left out: the second took 0.79-0.90 of it (median, six GPU sweeps)."""
    if path.name == "loaders.json":
        loader = capture.loader_for_loop(capture.read_loaders(path)) or {}  # (none recorded: no rate)
        if (rate := capture.batches_per_second(loader)) is None:
            raise ValueError("fewer than two batches were recorded")
        return rate * (loader.get("batch_size") or 1), math.nan
    data = json.loads(path.read_text(encoding="utf-8"))
    seconds, images = steady_epochs(data.get("epoch_seconds") or [], data.get("epoch_images") or [])
    if seconds:
        return sum(images) / sum(seconds), sum(seconds) / len(seconds)
    epochs = data.get("epoch_seconds") or [math.nan]
    return float(data["images_per_sec"]), float(sum(epochs) / len(epochs))


def loop_times(path: Path) -> tuple[float, float]:
    """(compute, data wait) per batch in ms (NaN where unrecorded), from the hook or a kit script's warm epochs:
    checks that compute per batch does not change with the workers (docs/profiling-model.md, assumption 2)."""
    if path.name == "loaders.json":
        step = capture.loop_step(capture.loader_for_loop(capture.read_loaders(path)) or {})
        return (math.nan, math.nan) if step is None else (1e3 * step.compute_s, 1e3 * step.wait_s)
    data = json.loads(path.read_text(encoding="utf-8"))
    seconds, waits, images = (data.get(k) or [] for k in ("epoch_seconds", "epoch_data_wait_seconds", "epoch_images"))
    batch = (data.get("settings") or {}).get("batch_size")
    if not seconds or not batch or not len(seconds) == len(waits) == len(images):
        return math.nan, math.nan
    warm = slice(1, None) if steady_epochs(seconds, images)[0] else slice(None)
    if (steps := sum(math.ceil(int(n) / int(batch)) for n in images[warm])) == 0:
        return math.nan, math.nan
    return 1e3 * (sum(seconds[warm]) - sum(waits[warm])) / steps, 1e3 * sum(waits[warm]) / steps


def steady_epochs(seconds: list[float], images: list[int]) -> tuple[list[float], list[int]]:
    """The epochs after the first, when the run recorded two or more with their images; else none (the whole run)."""
    if len(seconds) < 2 or len(images) != len(seconds) or not all(s > 0 for s in seconds[1:]):
        return [], []
    return [float(s) for s in seconds[1:]], [int(n) for n in images[1:]]


def result_row(s: Setting, cpus: int, status: str, detail: str) -> dict:
    """One run's row of RESULT_COLUMNS: its throughput and loop times read from its metrics when it ran."""
    ips = epoch = compute = wait = math.nan
    if status == "ok":
        try:
            ips, epoch = read_metrics(s.metrics)
            compute, wait = loop_times(s.metrics)
        except (OSError, ValueError, KeyError) as err:
            status, detail = "failed", f"no usable metrics in {s.metrics}: {err}"
    return dict(zip(RESULT_COLUMNS, (s.workers, cpus, ips, epoch, compute, wait, status, detail)))


def run_local(settings: list[Setting], runs_csv: Path | None = None) -> list[dict]:
    """Run each setting here, pinned to its CPUs; `runs_csv` is rewritten after each: a time limit keeps what ran."""
    rows = []
    for s in settings:
        s.log.parent.mkdir(parents=True, exist_ok=True)
        cpus = first_cpus(s.cpus)
        env = dict(os.environ)
        if "SLURM_CPUS_PER_TASK" in env:  # keep the script's CPU count in step with the pinning
            env["SLURM_CPUS_PER_TASK"] = str(len(cpus))
        print(f"sweep: workers={s.workers} on {len(cpus)} CPUs ...", flush=True)
        with s.log.open("w", encoding="utf-8") as log:
            code = subprocess.run(s.command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                  preexec_fn=lambda c=cpus: os.sched_setaffinity(0, c)).returncode
        status, detail = ("ok", str(s.log)) if code == 0 else ("failed", f"exit code {code}, see {s.log}")
        rows.append(result_row(s, len(cpus), status, detail))
        if runs_csv is not None:
            pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).to_csv(runs_csv, index_label="run")
    return rows


def pick_knee(results: pd.DataFrame, tolerance: float = KNEE_TOLERANCE) -> int | None:
    """The fewest workers whose throughput is within `tolerance` of the best."""
    ok = results.dropna(subset=["images_per_sec"])
    if ok.empty:
        return None
    return int(ok[ok["images_per_sec"] >= (1 - tolerance) * ok["images_per_sec"].max()]["workers"].min())


def median_of_repeats(rows: list[dict]) -> pd.DataFrame:
    """One row per setting: the median of its successful repeats, else its first failure. Not the fastest: warm
    repeats moved both ways by up to 12 %, and the fastest of n runs favours whichever setting is noisiest."""
    kept = []
    for _, runs in pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).groupby("workers", sort=True):
        ok = runs[(runs["status"] == "ok") & runs["images_per_sec"].notna()]
        row = (runs if ok.empty else ok).iloc[0].to_dict()
        row |= {column: ok[column].median() for column in ("images_per_sec", "epoch_seconds", "compute_ms", "wait_ms")
                if not ok.empty}
        if len(ok) > 1:
            row["detail"] = f"median of {len(ok)} runs; first: {row['detail']}"
        kept.append(row)
    return pd.DataFrame(kept, columns=list(RESULT_COLUMNS))


def repeat_spread(rows: list[dict]) -> str:
    """One line: the largest gap between runs of one setting; a knee closer to the best than that is partly chance."""
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).dropna(subset=["images_per_sec"])
    spread = frame.groupby("workers")["images_per_sec"].agg(lambda s: s.max() / s.min() - 1)
    if spread.empty:
        return "repeats: no setting produced a number"
    return (f"repeats: runs of one setting differed by up to {spread.max():.0%} (num_workers={int(spread.idxmax())}); "
            f"differences between settings smaller than that are noise (every run: runs.csv)")


def advised_workers(args: argparse.Namespace, command: list[str], out_dir: Path) -> tuple[int | None, str]:
    """The model's num_workers: from --lprof, else from `dlkit-prof run` on the command as given (its setting)."""
    from profiling.report import build_report

    if (lprof := args.lprof) is None:
        (folder := (out_dir / "profile").resolve()).mkdir(parents=True, exist_ok=True)
        profiled = [sys.executable, "-m", "profiling", "run", "--output-dir", str(folder), "--", *command]
        if not takes_metrics_json(Path(command[0])):  # a user's script: a bounded run, like each setting
            profiled = ["env", f"{capture.BATCHES_VAR}={args.batches}", *profiled]
        print("sweep: profiling the current setting (the script's own workers) for the model's advice ...", flush=True)
        with (folder / "log.txt").open("w", encoding="utf-8") as log:
            subprocess.run(profiled, stdout=log, stderr=subprocess.STDOUT)
        lprof = max(folder.glob("*.lprof"), key=lambda p: p.stat().st_mtime, default=None)  # the newest
    if lprof is None:
        return None, "no advice: profiling the current setting failed (see the profile folder)"
    return build_report(Path(lprof)).advice.num_workers, f"advice of {lprof}"


def summary(results: pd.DataFrame, knee: int | None, advice: int | None, advice_source: str) -> str:
    """The text table plus one paragraph that sets the knee beside the advice."""
    best = results["images_per_sec"].max()
    shown = results.assign(pct_of_best=100 * results["images_per_sec"] / best if best == best else math.nan)
    lines = [shown.drop(columns=["detail"]).to_string(index=False, float_format=lambda v: f"{v:.2f}"), ""]
    if knee is None:
        return "\n".join([*lines, "knee: none (no setting produced a throughput)"]) + "\n"
    best_w = int(shown.loc[shown["images_per_sec"].idxmax(), "workers"])
    knee_cpus = int(shown.loc[shown["workers"] == knee, "cpus"].iloc[0])
    lines += [f"best: num_workers={best_w} at {best:.1f} images/s",
              f"knee: num_workers={knee} (the fewest workers within {KNEE_TOLERANCE:.0%} of the best), "
              f"run with --cpus-per-task={knee_cpus}"]
    if advice is None:
        lines.append(advice_source if advice_source.startswith("no advice") else "model advice: none given")
    else:
        row = shown[shown["workers"] == advice]
        measured = "not measured" if row.empty or row["images_per_sec"].isna().all() else (
            f"{row['images_per_sec'].iloc[0]:.1f} images/s = {row['pct_of_best'].iloc[0]:.1f} % of the best")
        verdict = "agrees with" if advice == knee else ("is above" if advice > knee else "is below")
        lines.append(f"model advice: num_workers={advice} ({advice_source}): {measured}; it {verdict} the knee")
    lines += compute_drift(shown, knee)
    return "\n".join(lines) + "\n"


def compute_drift(results: pd.DataFrame, knee: int) -> list[str]:
    """Loop compute per batch, knee to most workers: a rise is what extra workers take from the main process."""
    timed = results.dropna(subset=["compute_ms"]).set_index("workers")["compute_ms"]
    if knee not in timed.index or timed.index.max() <= knee:
        return []
    top = int(timed.index.max())
    return [f"loop compute per batch: {timed[knee]:.2f} ms at the knee, {timed[top]:.2f} ms at num_workers={top} "
            f"({timed[top] / timed[knee] - 1:+.0%}: what the extra workers took from the loop)"]


def plot_sweep(results: pd.DataFrame, knee: int | None, advice: int | None, path: Path) -> Path:
    """Throughput against workers, with the 5 % band, the knee and the advice marked."""
    ok = results.dropna(subset=["images_per_sec"])
    ax = new_figure(8, 4.5).add_subplot()
    ax.plot(ok["workers"], ok["images_per_sec"], marker="o", color="#1f77b4", label="measured")
    if len(ok):
        best = ok["images_per_sec"].max()
        ax.axhspan((1 - KNEE_TOLERANCE) * best, best, color="#1f77b4", alpha=0.12,
                   label=f"within {KNEE_TOLERANCE:.0%} of the best")
    if knee is not None:
        ax.axvline(knee, color="#2ca02c", linestyle="--", label=f"knee: num_workers={knee}")
    if advice is not None:
        ax.axvline(advice, color="#d62728", linestyle=":", label=f"model advice: num_workers={advice}")
    ax.set(xticks=sorted(set(results["workers"]) | ({advice} if advice is not None else set())), ylim=(0, None),
           xlabel="num_workers (cpus_per_task = workers + the main process's CPUs)", ylabel="training images / s",
           title="DataLoader workers sweep")
    ax.legend(fontsize=8, loc="lower right")
    ax.figure.savefig(path)
    return path


def write_outputs(directory: Path, results: pd.DataFrame, advice: int | None = None, advice_source: str = "") -> str:
    """Write sweep.csv/.txt/.json/.png (the one writer of a sweep's outputs); returns the text summary."""
    knee = pick_knee(results)
    text = summary(results, knee, advice, advice_source)
    results.to_csv(directory / "sweep.csv", index=False)
    (directory / "sweep.txt").write_text(text, encoding="utf-8")
    (directory / "sweep.json").write_text(json.dumps({"knee": knee, "advice": advice, "advice_source": advice_source,
        "results": json.loads(results.to_json(orient="records"))}, indent=2) + "\n", encoding="utf-8")
    plot_sweep(results, knee, advice, directory / "sweep.png")
    return text


def summarise(out_dir: Path, rows: list[dict], advice: int | None, advice_source: str) -> tuple[pd.DataFrame, str]:
    """The median of each setting's runs, written (`write_outputs`; every run in runs.csv when repeated)."""
    results = median_of_repeats(rows)
    text = write_outputs(out_dir, results, advice, advice_source)
    if len(rows) > len(results):  # every repeat, in the order run: how far two runs of one setting differ
        pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).to_csv(out_dir / "runs.csv", index_label="run")
        text += "\n" + repeat_spread(rows)
    return results, text


def sweep_command(args: argparse.Namespace) -> int:
    """Run the sweep; exit 0 when every setting produced a number, 1 when some failed, 2 when none did."""
    (out_dir := Path(args.output_dir)).mkdir(parents=True, exist_ok=True)
    advice, advice_source = advised_workers(args, args.command, out_dir)
    workers = sorted(set(args.workers) | ({advice} if advice is not None else set()))
    if (gpus := args.gpus) is None:  # GPUs each setting trains with: what this machine shows (Slurm, CUDA, driver)
        machine = read_environment()
        gpus = min(gpus_from_env(machine.env, machine.nvml_gpus)[0] or 0, 1)
    settings = settings_for(args.command, workers, out_dir, gpus, args.batches, args.repeats)
    results, text = summarise(out_dir, run_local(settings, out_dir / "runs.csv"), advice, advice_source)
    print(text + f"\nwrote {out_dir / 'sweep.csv'}, {out_dir / 'sweep.txt'}, {out_dir / 'sweep.json'} and "
          f"{out_dir / 'sweep.png'}")
    failed = results[results["status"] != "ok"]
    for row in failed.itertuples():
        print(f"sweep: workers={row.workers} failed: {row.detail}", file=sys.stderr)
    if len(failed) == len(results):
        print("dlkit-prof sweep: error: no setting could be measured (the failures are above)", file=sys.stderr)
        return 2
    return 0 if failed.empty else 1
