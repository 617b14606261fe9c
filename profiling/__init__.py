"""Turn kernprof (line_profiler) output into a report that says where a training loop's time goes
and which `num_workers` / `--cpus-per-task` to ask for.

The pipeline is a straight line, one module a stage:
    lprof (load) -> table -> phases (classify) -> advice (advise) -> render / plots / html
`report.build_report` runs it; `cli` is the command line (`python -m profiling --help`).
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
