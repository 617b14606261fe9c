"""Submit the lesson runs from Python with submitit, with the same resources as the templates.

    python -m jobs submit single [--cpus 2] [--gpus 1] -- --synthetic --epochs 1
    python -m jobs submit sweep --workers 0,1,2,4 [--script FILE] [--repeats 3] -- --synthetic --epochs 1
    python -m jobs submit ddp --gpus 2 [--nodes 1] -- --synthetic --epochs 1

Each verb waits for its jobs, prints one pandas table (also written as results.csv in the
folder) and exits 1 with a one-line reason per failed job. Site settings come from the same
jobs/site.env as the templates: its SBATCH_* values reach submitit's sbatch through the
environment, and its data dir becomes MNIST_DATA.

The executor set-up and the wait for a job are jobs.slurm's (a fresh executor per job), and the sweep
is jobs.sweep's, on profiling.sweep's settings (one implementation of "one run per num_workers, cpus =
workers + the main process's CPUs", here as one job each).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from jobs.site import KIT_ROOT, SiteError, read_site, site_file, submit_environment
from jobs.slurm import JobShape, final_state, new_executor, wait_for_results
from profiling.argv import has_flag, script_problem
from profiling.cpu_rule import workers_for_cpus
from profiling.records import ProfileError

SCRIPTS = {"single": KIT_ROOT / "mnist_classify.py", "ddp": KIT_ROOT / "multi_gpu" / "mnist_ddp.py"}
COLUMNS = ("job_id", "status", "state", "world_size", "num_workers", "cpus_allowed", "steps", "images_per_sec",
           "test_accuracy", "detail")


def site_environment(environ: dict[str, str]) -> dict[str, str]:
    """The caller's environment plus the site's SBATCH_* values, MNIST_DATA and the kit on PYTHONPATH."""
    path = site_file(environ)
    site = read_site(path)
    env = submit_environment(site, environ, path)
    data = site.get("DLKIT_DATA_DIR")
    if data:
        env["MNIST_DATA"] = str(data if Path(data).is_absolute() else KIT_ROOT / data)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(KIT_ROOT), environ.get("PYTHONPATH")) if p)
    return env


def _read_metrics(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def train_task(argv: list[str], metrics_json: str) -> dict[str, Any]:
    """Runs inside the job: lesson 1's main(), then its metrics. Raises so submitit sees a failure."""
    import mnist_classify

    code = mnist_classify.main([*argv, "--metrics-json", metrics_json])
    if code != 0:
        raise RuntimeError(f"mnist_classify.py exited with {code}")
    return _read_metrics(Path(metrics_json))


def ddp_task(argv: list[str], metrics_json: str) -> dict[str, Any] | None:
    """Runs in every task of the DDP job: submitit's helper sets RANK, WORLD_SIZE, MASTER_ADDR/PORT."""
    from submitit.helpers import TorchDistributedEnvironment

    from multi_gpu.dist_env import read_env

    # The port is the kit's (from the job id, below Linux's ephemeral range): submitit's own pick, 20000-60000, once
    # met a port in use and rank 1 waited for ever. The GPU choice stays with the script (cuda:LOCAL_RANK).
    os.environ.setdefault("MASTER_PORT", str(read_env().master_port))
    dist = TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
    from multi_gpu import mnist_ddp

    code = mnist_ddp.main([*argv, "--metrics-json", metrics_json])
    if code != 0:
        raise RuntimeError(f"mnist_ddp.py exited with {code} on rank {dist.rank}")
    return _read_metrics(Path(metrics_json)) if dist.rank == 0 else None


def _row(job: Any, metrics: dict[str, Any] | None, detail: str) -> dict[str, Any]:
    settings = (metrics or {}).get("settings", {})
    return {"job_id": job.job_id, "status": "ok" if metrics is not None else "failed",
            "state": "COMPLETED" if metrics is not None else final_state(job),
            "world_size": (metrics or {}).get("world_size", 1 if metrics else None),
            "num_workers": settings.get("num_workers"), "cpus_allowed": settings.get("cpus_allowed"),
            "steps": (metrics or {}).get("steps"), "images_per_sec": (metrics or {}).get("images_per_sec"),
            "test_accuracy": (metrics or {}).get("test_accuracy"), "detail": detail}


def collect(job: Any, poll_s: float = 1.0) -> dict[str, Any]:
    """Wait for one job; a row with its metrics, or with a one-line reason when it failed.

    A job pending for a reason that can never clear is cancelled instead of waited on forever
    (jobs.slurm.wait_until_done).
    """
    results, why = wait_for_results(job, poll_s)  # one entry per task (a DDP job has several)
    if results is None:
        return _row(job, None, why)
    metrics = next((r for r in results if r is not None), None)
    return _row(job, metrics, f"log: {job.paths.stdout}")


def with_workers(script_args: list[str], cpus: int, gpus: int = 1) -> list[str]:
    """--num-workers = the workers the kit's one CPU rule fits in the task's CPUs (profiling.cpu_rule, as
    the templates and the advice count them), unless the caller chose one."""
    if has_flag(script_args, "--num-workers"):
        return list(script_args)
    pin = False if has_flag(script_args, "--no-pin-memory") else None
    return [*script_args, "--num-workers", str(workers_for_cpus(cpus, gpus, pin))]


class SubmitError(RuntimeError):
    """sbatch refused the job (e.g. more CPUs or GPUs than any node has): one line, exit 2."""


def launch(task: Any, shape: JobShape, args: argparse.Namespace, folder: Path, what: str) -> pd.DataFrame:
    """Submit one job from a fresh executor, wait for it, and return its one-row table."""
    metrics_json = str(folder / f"{shape.name}.metrics.json")
    try:
        script_args = with_workers(args.script_args, shape.cpus_per_task, 1 if shape.gpus_per_node else 0)
        job = new_executor(folder / "slurm", shape).submit(task, script_args, metrics_json)
    except Exception as error:  # submitit wraps sbatch's refusal in its own error types
        raise SubmitError(f"sbatch refused the {what}: {' '.join(str(error).split())[:300]}") from None
    print(f"submit: {what} is job {job.job_id}", flush=True)
    return pd.DataFrame([collect(job)], columns=list(COLUMNS))


def run_single(args: argparse.Namespace, folder: Path) -> pd.DataFrame:
    shape = JobShape(cpus_per_task=args.cpus, gpus_per_node=args.gpus, mem_gb=args.mem_gb,
                     time_min=args.time_min, name="mnist-single")
    return launch(train_task, shape, args, folder, f"single run (cpus_per_task={args.cpus}, gpus={args.gpus})")


def run_ddp(args: argparse.Namespace, folder: Path) -> pd.DataFrame:
    gpus = max(args.gpus, 1)
    shape = JobShape(cpus_per_task=args.cpus, gpus_per_node=args.gpus, tasks_per_node=gpus, nodes=args.nodes,
                     mem_gb=args.mem_gb, time_min=args.time_min, name="mnist-ddp")
    return launch(ddp_task, shape, args, folder, f"DDP run ({args.nodes} node(s) x {gpus} task(s), one per GPU)")


def run_sweep(args: argparse.Namespace, folder: Path) -> pd.DataFrame:
    from jobs.gather import parse_workers
    from jobs.sweep import run_sweep as sweep_jobs

    return sweep_jobs(args, folder, args.script or SCRIPTS["single"], parse_workers(args.workers))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dljobs submit", description=__doc__.split("\n")[0])
    parser.add_argument("verb", choices=("single", "sweep", "ddp"))
    parser.add_argument("--cpus", type=int, default=1, help="--cpus-per-task of each task (default 1)")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs per node (default 1; 0 for none)")
    parser.add_argument("--nodes", type=int, default=1, help="nodes, for ddp (default 1)")
    parser.add_argument("--mem-gb", type=int, default=8, help="memory per node in GB (default 8)")
    parser.add_argument("--time-min", type=int, default=20, help="time limit in minutes (default 20)")
    parser.add_argument("--workers", default="0,1,2,4,6,8", help="sweep settings (default 0,1,2,4,6,8)")
    parser.add_argument("--script", type=Path, default=None,
                        help="sweep: any training script (default: lesson 1's); its DataLoaders get each worker "
                             "count through profiling.capture, or its --num-workers flag when it has one")
    parser.add_argument("--repeats", type=int, default=1, help="sweep: runs per setting; the median is kept")
    parser.add_argument("--batches", type=int, default=200,
                        help="sweep: batches per setting for a script without --metrics-json (then it stops)")
    parser.add_argument("--lprof", type=Path, default=None, help="sweep: a profile whose advice goes beside the knee")
    parser.add_argument("--folder", type=Path, default=Path("runs/submitit"),
                        help="logs, pickles and results (default runs/submitit)")
    parser.epilog = "Flags for the training script go after --."
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = build_parser().parse_args(argv[:split])
    args.script_args = argv[split + 1:]
    if min(args.cpus, args.nodes, args.mem_gb, args.time_min, args.repeats, args.batches) < 1 or args.gpus < 0:
        print("dljobs submit: error: --cpus, --nodes, --mem-gb, --time-min, --repeats and --batches must be >= 1, "
              "--gpus >= 0", file=sys.stderr)
        return 2
    problem = script_problem(str(args.script)) if args.script is not None else None
    if problem:
        print(f"dljobs submit: error: --script: {problem}", file=sys.stderr)
        return 2
    try:
        if args.verb == "sweep":
            from jobs.gather import parse_workers

            parse_workers(args.workers)
        os.environ.update(site_environment(dict(os.environ)))
    except (SiteError, ValueError) as err:
        print(f"dljobs submit: error: {err}", file=sys.stderr)
        return 2
    if shutil.which("sbatch") is None:  # else every job of a sweep fails on its own, one line each
        print("dljobs submit: error: sbatch not found: run this on a Slurm login node "
              "(or start the sandbox: make slurm-up)", file=sys.stderr)
        return 2
    folder = args.folder.resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"dljobs submit: error: --folder {args.folder}: {err.strerror or err}", file=sys.stderr)
        return 2
    try:
        table = {"single": run_single, "ddp": run_ddp, "sweep": run_sweep}[args.verb](args, folder)
    except (SubmitError, ProfileError) as err:  # sbatch refused a job; --lprof is not a profile
        print(f"dljobs submit: error: {err}", file=sys.stderr)
        return 2
    table.to_csv(folder / "results.csv", index=False)
    if args.verb != "sweep":  # the sweep already printed its summary table
        print(table.to_string(index=False))
    failed = table[table["status"] != "ok"]
    for row in failed.itertuples():
        print(f"dljobs submit: job failed: {row.detail}", file=sys.stderr)
    return 1 if len(failed) else 0
