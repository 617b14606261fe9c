#!/usr/bin/env bash
# The advice judged on an interleaved sweep (benchmarks/interleaved_sweep.py): profile the script at
# num_workers=1 with `profiling run --alone --trace-batches 0` (margin 2 on the loader curve timed alone) and
# with `profiling run` (three epochs: the first traced, then worker counts tried in the script's own loop;
# run's default advice), then sweep num_workers in one process, each advised k among the settings. From the repository root, on a GPU node:
#
#   bash benchmarks/interleaved_advice.sh OUT 2,4,6,8,12,14 6 -- mnist_classify.py --synthetic
#   bash benchmarks/interleaved_advice.sh OUT 4,8,12,14 6 -- image_classify.py --data DIR/train --no-test
#
# OUT/profile.log, OUT/measured.log: the two reports; OUT/sweep/summary.md: the sweep and each rule's verdict.
set -euo pipefail
if [[ $# -lt 4 || $4 != -- ]]; then
    echo "usage: $0 OUT WORKERS PASSES -- SCRIPT [ARGS...]" >&2
    exit 2
fi
out=$1 workers=$2 passes=$3
shift 4
python=${PYTHON:-python3}
stem=$(basename "$1" .py)
mkdir -p "$out"
"$python" -m profiling run --alone --trace-batches 0 --output-dir "$out/profile" -- "$@" --epochs 1 --num-workers 1 \
    > "$out/profile.log" 2>&1
"$python" -m profiling run --output-dir "$out/measured" -- "$@" --epochs 3 --num-workers 1 > "$out/measured.log" 2>&1
grep -h -m1 "num_workers = " "$out/profile.log" "$out/measured.log" || true  # the two advices
"$python" benchmarks/interleaved_sweep.py --out "$out/sweep" --workers "$workers" --passes "$passes" \
    --advice "margin 2=$out/profile/$stem.lprof" --advice "measured=$out/measured/$stem.lprof" -- "$@"
