#!/bin/bash
# Issue 20's two GPU goals in one command, from the repository root; results go to $OUT (default runs/own_gpu).
#  1. Overhead: lesson 1's epoch plain, through `dlkit-prof run` (@profile), and unmodified (auto-profiling).
#  2. A CPU-heavy loader with no worker flag (tests/data/own_scripts/slow_items.py): the sweep (workers set
#     through the capture hook) measures every setting, profiles the script's own setting (0 workers) and
#     sets the model's advice beside the best.
# CPU smoke test: SMALL=1 bash benchmarks/own_script_gpu.sh
set -euo pipefail
OUT=${OUT:-runs/own_gpu}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ "${SMALL:-0}" = 1 ]; then
    overhead=(--workers 0 --repeats 1 --train-samples 256 --test-samples 128)
    sweep=(--workers 0,1 --batches 8); script=(--samples 512 --passes 2)
else
    overhead=(--workers 7 --repeats 2)
    sweep=(--workers 0,2,4,6,8,12 --batches 300); script=(--samples 20000 --passes 8)
fi
{ nvidia-smi --query-gpu=name --format=csv,noheader; nproc; "$PY" -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1 || true
"$PY" benchmarks/profiler_overhead.py --no-bare "${overhead[@]}" --out "$OUT/overhead" | tee "$OUT/overhead.md"
"$PY" -m profiling sweep "${sweep[@]}" --output-dir "$OUT/sweep" -- tests/data/own_scripts/slow_items.py "${script[@]}" \
    | tee "$OUT/sweep.log"
cp "$OUT"/sweep/profile/*.report.txt "$OUT/slow_items.report.txt" 2>/dev/null || true
