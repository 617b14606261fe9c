#!/usr/bin/env bash
# Issue 34: are the run's turns too short? `profiling run` caps a turn at an epoch's share of batches (a round
# of counts fits in one epoch); for epochs of 250-940 batches that is 35-135 batches, a skip of up to 29 of
# them included. Each script is profiled twice, as committed and with the cap lifted (DLPROF_TURN_SHARE=0,
# an experiment switch: a turn then times --segment-seconds, cut by an epoch's end and resumed), then
# judged by one sweep (separate processes, rotated passes). From the repo root: OUT=/tmp/x bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/turns}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
one() {  # NAME REPEATS BATCHES SWEEP_LIMIT -- SCRIPT ARGS
    local name=$1 repeats=$2 batches=$3 limit=$4; shift 5
    mkdir -p "$OUT/$name"
    for how in capped uncapped; do
        start=$(date +%s.%N)
        DLPROF_TURN_SHARE=$([ $how = capped ] && echo 1 || echo 0) timeout 100 python3 -m profiling run \
            --formats text,json --output-dir "$OUT/$name/$how" -- "$@" > "$OUT/$name/$how.log" 2>&1
        echo "$name $how ($(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s): $(grep -m1 'num_workers = ' "$OUT/$name/$how.log")"
        grep -m1 'Measured in your run' "$OUT/$name/$how.log"
    done
    k=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$OUT/$name/capped/*.report.json')[0]))['advice']['num_workers'])")
    u=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$OUT/$name/uncapped/*.report.json')[0]))['advice']['num_workers'])")
    all=$(python3 -c "print(','.join(str(w) for w in sorted({4, 8, 12, $k, $u})))")
    timeout "$limit" python3 -m profiling sweep --workers "$all" --repeats "$repeats" --batches "$batches" \
        --lprof "$(ls "$OUT/$name"/capped/*.lprof)" --output-dir "$OUT/$name/sweep" -- "$@" > "$OUT/$name/sweep.log" 2>&1
    cp "$OUT/$name/sweep/runs.csv" "$OUT/$name/runs.csv" 2>/dev/null
    tail -12 "$OUT/$name/sweep.log"
    rm -rf "$OUT/$name"/sweep/w* "$OUT/$name"/sweep/repeat* "$OUT/$name"/*/*.png "$OUT/$name"/*/*.html "$OUT/$name"/*/*.lprof
}
one small_files 4 400 200 -- benchmarks/styles/small_files.py --epochs 10 --files 16000
one conv_default1 3 600 150 -- benchmarks/styles/conv_default1.py --epochs 10 --samples 60000
