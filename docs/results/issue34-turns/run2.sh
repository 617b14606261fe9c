#!/usr/bin/env bash
# Issue 34, turns capped at an epoch's share or not (see run.sh), again with the sweep's runs kept: one script
# a call (PART=files|conv), profiled capped, uncapped, capped, uncapped, then one sweep of 3 rotated passes.
# From the repo root: OUT=/tmp/x PART=files bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/turns}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
case $PART in
files) name=small_files batches=400 args=(benchmarks/styles/small_files.py --epochs 10 --files 16000) ;;
conv) name=conv_default1 batches=600 args=(benchmarks/styles/conv_default1.py --epochs 10 --samples 60000) ;;
esac
d=$OUT/$name; mkdir -p "$d"
ks=4,8,12
for how in capped-1 uncapped-1 capped-2 uncapped-2; do
    start=$(date +%s.%N)
    DLPROF_TURN_SHARE=$([ "${how%-*}" = capped ] && echo 1 || echo 0) timeout 100 python3 -m profiling run \
        --formats text,json --output-dir "$d/$how" -- "${args[@]}" > "$d/$how.log" 2>&1
    echo "$how ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(grep -m1 'num_workers = ' "$d/$how.log")"
    grep -m1 'Measured in your run' "$d/$how.log"
    cp "$d/$how"/*.report.json "$d/$how.report.json" 2>/dev/null
    ks=$ks,$(python3 -c "import json; print(json.load(open('$d/$how.report.json'))['advice']['num_workers'])" 2>/dev/null || echo 4)
    [ "$how" = capped-1 ] || rm -rf "${d:?}/$how"
done
all=$(python3 -c "print(','.join(str(w) for w in sorted({int(w) for w in '$ks'.split(',')})))")
python3 -m profiling sweep --workers "$all" --repeats 3 --batches "$batches" \
    --lprof "$(ls "$d"/capped-1/*.lprof)" --output-dir "$d/sweep" -- "${args[@]}" \
    > "$d/sweep.log" 2>&1 &
pid=$!; ( sleep "${SWEEP_LIMIT:-300}"; kill $pid 2>/dev/null ) & wait $pid
cp "$d/sweep/runs.csv" "$d/runs.csv"; cp "$d/sweep/sweep.txt" "$d/sweep.txt" 2>/dev/null
python3 - "$d/runs.csv" <<'PY'
import sys, pandas as pd
runs = pd.read_csv(sys.argv[1]); ok = runs[runs.status == "ok"]
print(ok.groupby("workers").agg(runs=("images_per_sec", "size"), median=("images_per_sec", "median"),
      low=("images_per_sec", "min"), high=("images_per_sec", "max"), compute_ms=("compute_ms", "median"),
      wait_ms=("wait_ms", "median")).round(2).to_string())
PY
rm -rf "$d/sweep" "$d/capped-1"
