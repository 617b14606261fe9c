#!/usr/bin/env bash
# Issue 34, second call: as run.sh, one process per count (run.sh's two per count differed by 1-2 %), 8 rounds
# of 1.5 s windows; conv_default1 as in run.sh, small_files as set D profiled it (4 epochs of 48,000 files).
# From the repo root: OUT=/tmp/x bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/rotation}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
for name in conv_default1 small_files; do
    case $name in
    conv_default1) profiled=(--epochs 10 --samples 60000) judged=(--epochs 3 --samples 400000) ;;
    small_files) profiled=(--epochs 4 --files 48000) judged=(--epochs 20 --files 48000) ;;
    esac
    d=$OUT/$name; mkdir -p "$d"
    start=$(date +%s.%N)
    timeout 150 python3 -m profiling run --formats text,json --output-dir "$d/profile" -- \
        benchmarks/styles/$name.py "${profiled[@]}" > "$d/profile.log" 2>&1
    echo "$name profiled ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(grep -m1 'num_workers = ' "$d/profile.log")"
    grep -m1 'Measured in your run' "$d/profile.log"
    cp "$d"/profile/*.report.json "$d"/profile/*.loaders.json "$d/"; rm -rf "$d/profile"
    k=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$d/*.report.json')[0]))['advice']['num_workers'])")
    start=$(date +%s.%N)
    timeout 200 python3 benchmarks/rotation_judge.py --workers 2,4,8,12 --advice "$k" --replicas 1 --rounds 8 \
        --window 1.5 --warmup 0.5 --out "$d/judge" -- benchmarks/styles/$name.py "${judged[@]}" > "$d/judge.log" 2>&1
    echo "$name judged ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(tail -1 "$d/judge.log")"
    rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
done
