"""Turn kernprof (line_profiler) output into a report that says where a training loop's time goes
and which `num_workers` / `--cpus-per-task` to ask for.

The pipeline, one module a stage, is drawn and run in `profiling.report`; `cli` is the command line (`--help`).
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
