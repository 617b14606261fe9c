#!/bin/bash
# Backs docs/results.md, "CPU figures".
# Wall time of `python -m jobs check job.sbatch`, run from each corpus job's folder as a user would,
# beside a bare `python -c pass` at the same moment (the interpreter's own start-up), ROUNDS times.
#   bash benchmarks/jobs_check_speed.sh [ROUNDS] > times.txt     (one line: round job what ms)
# Set OTHER=/path/to/another/checkout to time its checker too, interleaved (what=other).
# Python's bytecode caches should exist (run the checker once without PYTHONDONTWRITEBYTECODE):
# without them every call compiles the modules again and pays for it.
set -euo pipefail
rounds=${1:-3}
kit=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
cd "$kit/tests/data/job_corpus"
for r in $(seq "$rounds"); do
  for job in */job.sbatch; do
    dir=${job%/job.sbatch}
    for what in this ${OTHER:+other} pass; do
      start=$(date +%s%N)
      case $what in
        this) (cd "$dir"; PYTHONPATH=$kit "$py" -m jobs check job.sbatch >/dev/null 2>&1) || true ;;
        other) (cd "$dir"; PYTHONPATH=$OTHER "$py" -m jobs check job.sbatch >/dev/null 2>&1) || true ;;
        pass) "$py" -c pass ;;
      esac
      echo "$r $dir $what $(( ($(date +%s%N) - start) / 1000000 ))"
    done
  done
done
