#!/usr/bin/env bash
# Backs docs/results.md, "Issue 34: the advice measured in the user's own loop".
# Issue 34's goal on one script: `profiling run` (trace the first epoch, then try worker counts in the
# script's own loop) against an independent sweep (`profiling sweep --repeats R`: one process per setting,
# the settings taking turns pass by pass in a rotated order, each held to the CPUs the kit's rule gives it). From the repo root:
#
#   bash benchmarks/own_styles_advice.sh OUT 2,4,8,12,14 3 300 -- benchmarks/styles/tiny_mlp.py --epochs 3
#
# OUT/profile.log: the report; OUT/sweep.log and OUT/sweep/: the sweep; OUT/verdict.json: the advice, the
# sweep's best and knee, the ratio of their throughputs, the two goals (within 5 %, at most knee + 2), and each
# count's range over the passes, with whether the advice's runs reach the best's (if so, the sweep cannot part them),
# and each count's median data wait a step in the sweep (near zero: its workers kept up there).
set -euo pipefail
if [[ $# -lt 6 || $5 != -- ]]; then
    echo "usage: $0 OUT WORKERS REPEATS BATCHES -- SCRIPT [ARGS...]" >&2
    exit 2
fi
out=$1 workers=$2 repeats=$3 batches=$4
shift 5
py=${PYTHON:-python3}
mkdir -p "$out"
start=$(date +%s.%N)
"$py" -m profiling run --formats text,json --output-dir "$out/profile" -- "$@" > "$out/profile.log" 2>&1
echo "profile wall $(awk "BEGIN{print $(date +%s.%N) - $start}") s" >> "$out/profile.log"
k=$("$py" -c "import json, glob; print(json.load(open(glob.glob('$out/profile/*.report.json')[0]))['advice']['num_workers'])")
all=$("$py" -c "print(','.join(str(w) for w in sorted({int(w) for w in '$workers,$k'.split(',')})))")
lprof=$(ls "$out"/profile/*.lprof)  # given, so the sweep does not profile the script again first
"$py" -m profiling sweep --workers "$all" --repeats "$repeats" --batches "$batches" --lprof "$lprof" \
    --output-dir "$out/sweep" -- "$@" \
    > "$out/sweep.log" 2>&1
"$py" - "$out" "$k" <<'PY' | tee "$out/verdict.json"
import csv, json, sys
out, k = sys.argv[1], int(sys.argv[2])
sweep = json.load(open(f"{out}/sweep/sweep.json"))
rate = {r["workers"]: r["images_per_sec"] for r in sweep["results"] if r["images_per_sec"]}
best = max(rate, key=rate.get)
ratio = rate[best] / rate[k]
runs = {}  # every pass's rate per count: does the sweep itself part the advice from its best?
for row in csv.DictReader(open(f"{out}/sweep/runs.csv")):
    if row["status"] == "ok" and row["images_per_sec"]:
        runs.setdefault(int(row["workers"]), []).append(float(row["images_per_sec"]))
print(json.dumps({"advice": k, "best": best, "knee": sweep["knee"], "ratio": round(ratio, 3),
                  "within_5pct": ratio <= 1.05, "at_most_knee_plus_2": k <= sweep["knee"] + 2,
                  "images_per_sec": {w: round(r, 1) for w, r in sorted(rate.items())},
                  "runs_range": {w: [round(min(r)), round(max(r))] for w, r in sorted(runs.items())},
                  "advice_runs_overlap_best": bool(runs) and max(runs[k]) >= min(runs[best]),
                  "sweep_wait_ms": {r["workers"]: round(r["wait_ms"], 2) for r in sweep["results"]  # the passes' median
                                    if r.get("wait_ms") is not None}}))
PY
