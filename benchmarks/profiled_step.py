"""Why the profile overstates the fed loop's step: the profiler, or the starved loop?

The advice holds a paced curve for the compute per batch that a profile at num_workers=1 measured.
Once fed, the real loop's step was 0.57-0.88 of that on H100s and H200s (docs/results.md). Two causes
would give that: kernprof's line tracing slows each step, or a loop starved at 1 worker computes more
slowly (an idle GPU between steps, clocks down). This separates them. For each workload and each
num_workers (1, and one that feeds the loop): one epoch under `python -m profiling run` (no curve),
and two epochs plain, each with the compute per batch it measured (the epoch less its data wait, per
batch; for the profile, its report's compute lines). Same node, same CPUs, one after the other.

    PYTHONUNBUFFERED=1 python3 benchmarks/profiled_step.py --out /tmp/step --fed 14

If profiled/plain is about the same at 1 worker and fed, the profiler is the cause; if the plain
compute at 1 worker is also above the fed one, the starved loop is.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mnist_classify import positive_int
from profile_advice import known_workloads, step  # one command, its log, its time (benchmarks/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = {"mnist": ["--train-samples", "60000"],
             "mnist-heavy-aug": ["--train-samples", "20000", "--augment", "heavy"]}


def plain_compute_ms(metrics: Path, batch_size: int) -> list[float]:
    """Per epoch: the loop's compute per batch (epoch less its data wait) in an unprofiled run."""
    m = json.loads(metrics.read_text(encoding="utf-8"))
    return [1e3 * (s - w) / (n / batch_size) for s, w, n in
            zip(m["epoch_seconds"], m["epoch_data_wait_seconds"], m["epoch_images"])]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/profiled_step"))
    p.add_argument("--fed", type=positive_int, default=14, metavar="N",
                   help="num_workers that feed the loop (the sweep's knee or more)")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of: {', '.join(WORKLOADS)}")
    p.add_argument("--data-dir", type=Path, default=Path("data"))
    p.add_argument("--quick", action="store_true", help="CPU smoke test: 640 samples, workers 0 and 1")
    args = p.parse_args(argv)
    known_workloads(p, args.workloads, WORKLOADS)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    settings = (0, 1) if args.quick else (1, args.fed)
    rows = []
    for name in args.workloads.split(","):
        extra = WORKLOADS[name] if not args.quick else ["--train-samples", "640", *WORKLOADS[name][2:]]
        base = [str(REPO / "mnist_classify.py"), "--synthetic", "--data-dir", str(args.data_dir.resolve()),
                "--test-samples", "500", "--batch-size", "64", *extra]
        for workers in settings:
            tag = f"{name}-w{workers}"
            step(f"{tag}: profiled, one epoch", [sys.executable, "-m", "profiling", "run", "--curve-seconds", "0",
                 "--formats", "json", "--output-dir", str(out / tag), "--", *base, "--epochs", "1",
                 "--num-workers", str(workers)], out / f"{tag}.profiled.log")
            report = json.loads((out / tag / "mnist_classify.report.json").read_text(encoding="utf-8"))
            step(f"{tag}: plain, two epochs", [sys.executable, *base, "--epochs", "2", "--num-workers", str(workers),
                 "--metrics-json", str(out / f"{tag}.metrics.json")], out / f"{tag}.plain.log")
            plain = plain_compute_ms(out / f"{tag}.metrics.json", 64)
            profiled = 1e3 * report["loop"]["compute_per_batch_s"]
            rows.append({"workload": name, "num_workers": workers, "profiled_ms": round(profiled, 3),
                         "plain_epoch1_ms": round(plain[0], 3), "plain_epoch2_ms": round(plain[-1], 3),
                         "profiled_over_plain_epoch1": round(profiled / plain[0], 3)})
    lines = ["| workload | num_workers | profiled compute ms/batch | plain, epoch 1 | plain, epoch 2 "
             "| profiled / plain (epoch 1) |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['workload']} | {r['num_workers']} | {r['profiled_ms']:.2f} | {r['plain_epoch1_ms']:.2f} | "
              f"{r['plain_epoch2_ms']:.2f} | {r['profiled_over_plain_epoch1']:.2f} |" for r in rows]
    (out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
