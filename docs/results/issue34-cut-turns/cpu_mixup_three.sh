#!/usr/bin/env bash
# cpu_mixup, the script whose step grows with its workers, by three instruments on one node: the trials
# of `profiling run`, a sweep of whole runs (fresh processes held to their CPUs, three interleaved passes),
# and benchmarks/rotation_judge.py. From the repo root: OUT=/tmp/x bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/three}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
script=benchmarks/styles/cpu_mixup.py
timeout 150 python3 -m profiling run --formats text,json --output-dir "$OUT/run" -- $script --epochs 6 > "$OUT/run.log" 2>&1
grep -m1 'num_workers = ' "$OUT/run.log"; grep -m1 'Measured in your run' "$OUT/run.log"
k=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$OUT/run/*.report.json')[0]))['advice']['num_workers'])")
timeout 240 python3 -m profiling sweep --workers 4,6,8 --repeats 3 --batches 300 --lprof "$OUT"/run/*.lprof \
    --output-dir "$OUT/sweep" -- $script --epochs 3 > "$OUT/sweep.log" 2>&1
grep -E '^(best|knee|model advice)' "$OUT/sweep.log"
timeout 230 python3 benchmarks/rotation_judge.py --workers 2,4,6,8,12 --advice "$k" --replicas 1 --rounds 12 \
    --window 1.5 --warmup 0.5 --out "$OUT/judge" -- $script --epochs 60 > "$OUT/judge.log" 2>&1
tail -1 "$OUT/judge.log"
rm -f "$OUT"/judge/*.counter "$OUT"/judge/*.loaders.json "$OUT"/run/*.lprof
