#!/usr/bin/env bash
# Whole epochs, the user's own measure: the unmodified script at two worker counts, each its own process held to the
# CPUs the kit's rule gives it (taskset, first W + 2), persistent_workers=True as the report's edit leaves it, three
# interleaved passes. Which ranking do they agree with, the trials' or the judge's? Also torch's default thread count
# under each CPU mask. From the repo root: OUT=/tmp/x bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/epochs}; mkdir -p "$OUT"
lscpu | grep -E "^CPU\(s\)|Thread|Core|Socket" > "$OUT/lscpu.txt"
for cpus in 0-5 0-7 0-9 0-15; do
    echo "taskset -c $cpus: torch threads $(taskset -c "$cpus" python3 -c 'import torch; print(torch.get_num_threads())')"
done | tee "$OUT/threads.txt"
run() {  # NAME WORKERS PASS ARGS...
    local name=$1 k=$2 pass=$3; shift 3
    JUDGE_COUNTER=$OUT/counter JUDGE_PERSISTENT=1 DLPROF_SET_WORKERS=$k DLPROF_LOADERS=$OUT/loaders.json \
        taskset -c "0-$((k + 1))" timeout 120 python3 benchmarks/rotation_judge.py --child \
        "benchmarks/styles/$name.py" "$@" 2>/dev/null | grep '^epoch' | sed "s/^/$name w$k pass$pass /" | tee -a "$OUT/epochs.txt"
}
for pass in 1 2 3; do
    for k in 4 12; do run conv_default1 "$k" "$pass" --epochs 5 --samples 60000; done
    for k in 6 8; do run cpu_mixup "$k" "$pass" --epochs 5; done
done
