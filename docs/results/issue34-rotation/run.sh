#!/usr/bin/env bash
# Issue 34: the advice of `profiling run` (set C's runs: 10 epochs of 60,000 samples) judged by the rotation
# judge (benchmarks/rotation_judge.py: one live process per count, two per count here, paused and resumed in
# turns, 6 rotated rounds of 1.5 s windows). From the repo root: OUT=/tmp/x bash THIS [tiny_mlp conv_default1]
set -uo pipefail
OUT=${OUT:-/tmp/rotation}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
[ $# -gt 0 ] || set -- tiny_mlp conv_default1
for name in "$@"; do
    d=$OUT/$name; mkdir -p "$d"
    start=$(date +%s.%N)
    timeout 120 python3 -m profiling run --formats text,json --output-dir "$d/profile" -- \
        benchmarks/styles/$name.py --epochs 10 --samples 60000 > "$d/profile.log" 2>&1
    echo "$name profiled ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(grep -m1 'num_workers = ' "$d/profile.log")"
    grep -m1 'Measured in your run' "$d/profile.log"
    cp "$d"/profile/*.report.json "$d/" && rm -rf "$d/profile"
    k=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$d/*.report.json')[0]))['advice']['num_workers'])")
    start=$(date +%s.%N)
    timeout 300 python3 benchmarks/rotation_judge.py --workers 2,4,8,12 --advice "$k" --replicas 2 --rounds 6 \
        --window 1.5 --warmup 0.5 --out "$d/judge" -- benchmarks/styles/$name.py --epochs 3 --samples 400000 \
        > "$d/judge.log" 2>&1
    echo "$name judged ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(tail -1 "$d/judge.log")"
    rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
done
