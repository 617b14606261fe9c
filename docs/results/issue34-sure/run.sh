#!/usr/bin/env bash
# Issue 34: the trials that drop counts surely more than 5 % behind and give the turns left to the rest (ddcb3de),
# judged by benchmarks/rotation_judge.py with more rounds, paired by round, and a 90 % interval for its ratio.
# From the repo root: ROUNDS=12 OUT=/tmp/x bash THIS NAME...   (NAME: tiny_mlp, conv_default1, small_files,
# augment_heavy or cpu_mixup; the profiled and judged commands are those of ../issue34-persistent/run.sh)
# JUDGES="" profiles only; JUDGES="persistent plain": judge the script as the report's edit leaves it
# (persistent_workers=True, into judge/), then as it is (into judge-plain/); the default judges it as it is only, into judge/. REPLICAS=3: three processes per
# count (the judge takes each round's median), JUDGE_LIMIT: the judge's time limit in seconds (300).
set -uo pipefail
OUT=${OUT:-/tmp/sure}; ROUNDS=${ROUNDS:-12}; JUDGES=${JUDGES-plain}; REPLICAS=${REPLICAS:-1}; JUDGE_LIMIT=${JUDGE_LIMIT:-300}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
since() { awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $1}"; }
for name in "$@"; do
    case $name in
    tiny_mlp|conv_default1) profiled=(--epochs 10 --samples 60000) judged=(--epochs 100 --samples 60000) ;;
    small_files) profiled=(--epochs 4 --files 48000) judged=(--epochs 20 --files 48000) ;;
    augment_heavy) profiled=(--epochs 10 --samples 25600) judged=(--epochs 20 --samples 25600) ;;
    cpu_mixup) profiled=(--epochs 6) judged=(--epochs 60) ;;
    esac
    d=$OUT/$name; mkdir -p "$d"; start=$(date +%s.%N)
    timeout 150 python3 -m profiling run --formats text,json --output-dir "$d/run" -- \
        "benchmarks/styles/$name.py" "${profiled[@]}" > "$d/run.log" 2>&1
    echo "$name profiled ($(since "$start") s): $(grep -m1 'num_workers = ' "$d/run.log")"
    grep -m1 'Measured in your run' "$d/run.log"
    cp "$d"/run/*.report.json "$d/run.report.json"; cp "$d"/run/*.loaders.json "$d/run.loaders.json"; rm -rf "${d:?}/run"
    k=$(python3 -c "import json; print(json.load(open('$d/run.report.json'))['advice']['num_workers'])")
    for how in $JUDGES; do
        flag=(); into=judge
        [ "$how" = persistent ] && flag=(--persistent)
        [ "$how" = plain ] && [ "$JUDGES" != plain ] && into=judge-plain
        start=$(date +%s.%N)
        timeout "$JUDGE_LIMIT" python3 benchmarks/rotation_judge.py --workers 2,4,6,8,12 --advice "$k" \
            --replicas "$REPLICAS" "${flag[@]}" \
            --rounds "$ROUNDS" --window 1.5 --warmup 0.5 --out "$d/$into" -- "benchmarks/styles/$name.py" \
            "${judged[@]}" > "$d/$into.log" 2>&1
        echo "$name judged $how ($(since "$start") s): $(tail -1 "$d/$into.log")"
        rm -f "$d/$into"/*.counter "$d/$into"/*.loaders.json
    done
done
