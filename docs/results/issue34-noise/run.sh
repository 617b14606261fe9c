#!/usr/bin/env bash
# Issue 34: where does a sweep's noise come from: between processes, or from moment to moment inside one?
# Two worker counts of one script take turns as separate processes, A B A B A B, each pinned to the first
# W+2 CPUs (as `profiling sweep` pins them), each training 6 epochs through the capture hook (num_workers set
# on the script's DataLoaders, nothing traced), its epoch times printed by the script itself.
# From the repo root: OUT=/tmp/x bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/noise}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch; print(torch.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
for script in tiny_mlp conv_default1; do
    for pass in 1 2 3; do
        for w in 4 12; do
            log=$OUT/$script-w$w-p$pass.log
            DLPROF_LOADERS=$OUT/$script-w$w-p$pass.loaders.json DLPROF_SET_WORKERS=$w \
                timeout 60 taskset -c 0-$((w + 1)) python3 -m profiling.capture \
                benchmarks/styles/$script.py --epochs 6 --samples 60000 > "$log" 2>&1
            echo "$script w=$w pass $pass: $(grep -o 'epoch [0-9].* [0-9.]*s' "$log" | grep -o '[0-9.]*s$' | tr '\n' ' ')"
        done
    done
done | tee "$OUT/epochs.txt"
