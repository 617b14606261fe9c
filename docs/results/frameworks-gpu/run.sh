#!/usr/bin/env bash
# Frameworks on a GPU node: a Lightning script and a Hugging Face Trainer script (this folder), each profiled
# unmodified with `python -m profiling run`, then each advice judged by benchmarks/rotation_judge.py (one process
# per count, rotated). From the repo root: OUT=/tmp/x bash docs/results/frameworks-gpu/run.sh [NAME...]
# (NAME: lit_mnist, hf_trainer, both by default; ROUNDS sets the judge's rounds, 8 by default; PROFILED and
# JUDGED the scripts' arguments, WORKERS the judged counts)
set -uo pipefail
OUT=${OUT:-/tmp/frameworks}; ROUNDS=${ROUNDS:-8}; here=docs/results/frameworks-gpu; mkdir -p "$OUT"
read -ra profiled <<< "${PROFILED:---epochs 10 --samples 40000}"; read -ra judged <<< "${JUDGED:---epochs 100 --samples 40000}"
[ $# -gt 0 ] || set -- lit_mnist hf_trainer
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc
  python3 -c "import torch, lightning, transformers; print(torch.__version__, lightning.__version__, transformers.__version__)"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
since() { awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $1}"; }
for name in "$@"; do
    d=$OUT/$name; mkdir -p "$d"; start=$(date +%s.%N)
    timeout 150 python3 -m profiling run --formats text,json --output-dir "$d/run" -- \
        "$here/$name.py" "${profiled[@]}" > "$d/run.log" 2>&1
    echo "$name profiled ($(since "$start") s): $(grep -m1 'num_workers = ' "$d/run.log")"
    grep -m1 -A4 'Exact edits' "$d/run.log"; grep -m1 'Measured in your run' "$d/run.log"
    cp "$d"/run/*.report.json "$d/run.report.json"; cp "$d"/run/*.loaders.json "$d/run.loaders.json"; rm -rf "${d:?}/run"
    k=$(python3 -c "import json; print(json.load(open('$d/run.report.json'))['advice']['num_workers'])")
    start=$(date +%s.%N)
    timeout "${JUDGE_LIMIT:-200}" python3 benchmarks/rotation_judge.py --workers "${WORKERS:-2,4,6,8,12}" --advice "$k" --replicas 1 \
        --rounds "$ROUNDS" --window 1.5 --warmup 0.5 --out "$d/judge" -- "$here/$name.py" "${judged[@]}" \
        > "$d/judge.log" 2>&1
    echo "$name judged ($(since "$start") s): $(tail -1 "$d/judge.log")"
    rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
done
