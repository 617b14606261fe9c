"""Does `profiling run`'s work beside the script slow the script's own start-up?

While its child starts, `profiling run` reads NVML's GPU count (profiling.facts.read_environment) and imports
the report's modules in a thread (pandas, matplotlib). On one fresh H200 the profiled script reached its first
epoch 2.3 s later than a plain run (docs/results/issue34-eleventh-h200). This times a child that imports torch
and initialises CUDA, alone and beside each of those two pieces of work, in interleaved rounds, so that the
cost of each shows apart.

    python benchmarks/startup_contention.py [ROUNDS]
"""
import json
import subprocess
import sys
import threading
import time

from profiling.facts import read_environment
from profiling.runner import _import_report_modules

CHILD = ("import time; t = time.perf_counter(); import torch; i = time.perf_counter(); "
         "torch.zeros(1, device='cuda' if torch.cuda.is_available() else 'cpu'); "
         "print(round(i - t, 3), round(time.perf_counter() - i, 3))")
BESIDE = {"alone": lambda: None, "nvml": read_environment, "imports": _import_report_modules,
          "both": lambda: (threading.Thread(target=_import_report_modules).start(), read_environment())}


def one(how: str) -> dict:
    """Start the child, do `how`'s work beside it (as runner.run_profiled does), time the child to its exit."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    BESIDE[how]()
    out, _ = child.communicate()
    import_s, cuda_s = map(float, out.split())
    return {"how": how, "child_s": round(time.perf_counter() - start, 3), "import_torch_s": import_s,
            "cuda_init_s": cuda_s}


def main(rounds: int) -> None:
    rows = []
    for r in range(rounds):
        order = list(BESIDE)[r % len(BESIDE):] + list(BESIDE)[:r % len(BESIDE)]  # each goes first in turn
        for how in order:
            # the modules imported beside are cached after their first import: a fresh interpreter each time
            row = json.loads(subprocess.run([sys.executable, __file__, "--one", how], capture_output=True,
                                            text=True, check=True).stdout)
            rows.append({"round": r + 1, **row})
            print(json.dumps(rows[-1]), flush=True)
    for how in BESIDE:
        times = sorted(row["child_s"] for row in rows if row["how"] == how)
        print(f"{how:8s} child to exit: median {times[len(times) // 2]:.2f} s  (min {times[0]:.2f}, "
              f"max {times[-1]:.2f}, {len(times)} runs)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2])))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
