#!/usr/bin/env bash
# Issue 34, the trials with one count's workers alive at a time (c0c29a3 on): profile, then judge, in one device call.
# From the repo root:  PROFILE="A B" JUDGE="C D" BUDGET=570 OUT=/tmp/x bash THIS [PRIOR]
#   PROFILE: styles to profile (issue34-sure/run.sh's commands, with JUDGES="": profiled, not judged);
#   JUDGE:   styles to judge (issue34-sure's judge: 4 rounds, 3 processes a count, persistent workers), each with the
#            advice in OUT/STYLE/run.report.json or, where this call did not profile it, PRIOR/STYLE/run.report.json;
#   BUDGET:  seconds for the whole call; a judge gets at most 230 s and starts only with 120 s or more left.
set -uo pipefail
OUT=${OUT:-/tmp/one-alive}; PRIOR=${1:-}; BUDGET=${BUDGET:-570}; begin=$(date +%s)
cd "$(dirname "$0")/../../.." || exit 2
[ -n "${PROFILE:-}" ] && JUDGES="" OUT=$OUT bash docs/results/issue34-sure/run.sh $PROFILE
for name in ${JUDGE:-}; do
    case $name in
    tiny_mlp|conv_default1) judged=(--epochs 100 --samples 60000) ;;
    small_files) judged=(--epochs 20 --files 48000) ;;
    augment_heavy) judged=(--epochs 20 --samples 25600) ;;
    cpu_mixup) judged=(--epochs 60) ;;
    *) echo "run.sh: error: unknown style $name (one of benchmarks/styles/)" >&2; exit 2 ;;
    esac
    d=$OUT/$name; mkdir -p "$d"; rm -rf "${d:?}/judge"
    report=$d/run.report.json; [ -f "$report" ] || report=$PRIOR/$name/run.report.json
    [ -f "$report" ] || { echo "run.sh: error: no run.report.json for $name: profile it (PROFILE) or name PRIOR" >&2; exit 2; }
    k=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['advice']['num_workers'])" "$report") || exit 2
    left=$(( BUDGET - ($(date +%s) - begin) - 10 ))
    [ "$left" -lt 120 ] && { echo "$name not judged: $left s left"; continue; }
    limit=$(( left < 230 ? left : 230 ))
    timeout "$limit" python3 benchmarks/rotation_judge.py --workers 2,4,6,8,12 --advice "$k" --replicas 3 --persistent \
        --rounds 4 --window 1.5 --warmup 0.5 --out "$d/judge" -- "benchmarks/styles/$name.py" "${judged[@]}" \
        > "$d/judge.log" 2>&1
    echo "$name judged (advice $k, limit $limit s): $(tail -1 "$d/judge.log")"
    rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
done
