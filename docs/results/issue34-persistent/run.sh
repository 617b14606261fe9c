#!/usr/bin/env bash
# Issue 34: the trials with one persistent DataLoader per count (this commit) against the trials that started fresh
# workers every turn (OLD: a copy of the previous commit's profiling/), side by side on one node, and both judged by
# benchmarks/rotation_judge.py on the run's own data. From the repo root: [OLD=DIR] OUT=/tmp/x bash THIS NAME...
# (NAME: tiny_mlp, conv_default1, small_files, augment_heavy or cpu_mixup)
set -uo pipefail
OUT=${OUT:-/tmp/persistent}; OLD=${OLD-.old}; mkdir -p "$OUT"  # OLD= (empty): the new trials alone
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
root=$PWD
for name in "$@"; do
    case $name in
    tiny_mlp|conv_default1) profiled=(--epochs 10 --samples 60000) judged=(--epochs 100 --samples 60000) ;;
    small_files) profiled=(--epochs 4 --files 48000) judged=(--epochs 20 --files 48000) ;;
    augment_heavy) profiled=(--epochs 10 --samples 25600) judged=(--epochs 20 --samples 25600) ;;
    cpu_mixup) profiled=(--epochs 6) judged=(--epochs 60) ;;
    esac
    d=$OUT/$name; mkdir -p "$d"
    for how in new ${OLD:+old}; do
        start=$(date +%s.%N)
        if [ $how = new ]; then
            timeout 150 python3 -m profiling run --formats text,json --output-dir "$d/$how" -- \
                "benchmarks/styles/$name.py" "${profiled[@]}" > "$d/$how.log" 2>&1
        else
            (cd "$OLD" && PYTHONPATH=$PYTHONPATH:$PWD timeout 150 python3 -m profiling run --formats text,json \
                --output-dir "$d/$how" -- "$root/benchmarks/styles/$name.py" "${profiled[@]}") > "$d/$how.log" 2>&1
        fi
        echo "$name $how ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(grep -m1 'num_workers = ' "$d/$how.log")"
        grep -m1 'Measured in your run' "$d/$how.log"
        cp "$d/$how"/*.report.json "$d/$how.report.json"; cp "$d/$how"/*.loaders.json "$d/$how.loaders.json"; rm -rf "${d:?}/$how"
    done
    k=$(python3 -c "import json; print(json.load(open('$d/new.report.json'))['advice']['num_workers'])")
    start=$(date +%s.%N)
    timeout 230 python3 benchmarks/rotation_judge.py --workers 2,4,6,8,12 --advice "$k" --replicas 1 --rounds 8 \
        --window 1.5 --warmup 0.5 --out "$d/judge" -- "benchmarks/styles/$name.py" "${judged[@]}" > "$d/judge.log" 2>&1
    echo "$name judged ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(tail -1 "$d/judge.log")"
    rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
done
