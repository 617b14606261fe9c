#!/usr/bin/env bash
# Issue 34: the trials' schedule against separate processes, each run long enough to rank flat counts.
# From the repo root, on a GPU node:  OUT=/tmp/x bash benchmarks/long_trials.sh STYLE EPOCHS JUDGE_SECONDS
# 1. `profiling run --try-workers 2,4,6,8,12` with benchmarks/long_trials/sitecustomize.py: no count dropped, turns
#    until the script ends (trials/); again with LONG_TRIALS_ONE_ALIVE=1 (one-alive/) unless ONE_ALIVE=0. (Since
#    c0c29a3 the kit keeps one count alive itself, so both runs do; the all-alive schedule is 344104b's.)
# 2. benchmarks/rotation_judge.py on the same counts, persistent workers, 3 processes a count, for JUDGE_SECONDS
#    (judge/; 0 skips it).
# ARGS="--samples 6000" replaces the style's size. Compare: python benchmarks/long_trials_compare.py OUT/STYLE
set -uo pipefail
if [ $# -lt 2 ] || [ ! -f "benchmarks/styles/$1.py" ] || ! [[ $2 =~ ^[0-9]+$ && ${3:-0} =~ ^[0-9]+$ ]]; then
    echo "long_trials.sh: error: usage: bash benchmarks/long_trials.sh STYLE EPOCHS [JUDGE_SECONDS] (from the repo root;" \
         "STYLE one of benchmarks/styles/)" >&2
    exit 2
fi
style=$1; epochs=$2; judge_s=${3:-0}; OUT=${OUT:-/tmp/long-trials}; ONE_ALIVE=${ONE_ALIVE:-1}
d=$OUT/$style; mkdir -p "$d"
case $style in
tiny_mlp|conv_default1) args=(--samples 60000) ;;
small_files) args=(--files 48000) ;;
augment_heavy) args=(--samples 25600) ;;
*) args=() ;;
esac
[ -n "${ARGS:-}" ] && read -ra args <<< "$ARGS"  # e.g. a short smoke run on a CPU
trials() {  # NAME ONE_ALIVE
    local start=$SECONDS
    PYTHONPATH="$PWD/benchmarks/long_trials:${PYTHONPATH:-}" LONG_TRIALS_ONE_ALIVE=$2 python3 -m profiling run \
        --try-workers 2,4,6,8,12 --formats json --output-dir "$d/$1" -- \
        "benchmarks/styles/$style.py" --epochs "$epochs" "${args[@]}" > "$d/$1.log" 2>&1
    echo "$style $1: exit $? in $((SECONDS - start)) s"
    mv "$d/$1"/*.loaders.json "$d/$1.loaders.json"; rm -rf "${d:?}/$1"
}
trials trials 0
[ "$ONE_ALIVE" = 1 ] && trials one-alive 1
if [ "$judge_s" -gt 0 ]; then
    start=$SECONDS
    timeout "$judge_s" python3 benchmarks/rotation_judge.py --workers 2,4,6,8,12 --replicas 3 --persistent \
        --rounds 100 --window 1.5 --warmup 0.5 --out "$d/judge" -- "benchmarks/styles/$style.py" \
        --epochs 1000 "${args[@]}" > "$d/judge.log" 2>&1
    echo "$style judge: $((SECONDS - start)) s, $(tail -1 "$d/judge.log")"
    rm -f "$d/judge"/*.counter "$d/judge"/*.loaders.json
fi
