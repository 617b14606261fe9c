#!/usr/bin/env bash
# Issue 34: small_files profiled with the persistent-loader trials, watched for a stall after its last epoch (an
# earlier call's run did not end within 150 s): 40 s after "epoch 3" the script's process gets SIGABRT, and
# PYTHONFAULTHANDLER prints where every thread was. Then the rotation judge, as run.sh. From the repo root:
# OUT=/tmp/x bash THIS
set -uo pipefail
OUT=${OUT:-/tmp/sf}; d=$OUT/small_files; mkdir -p "$d"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
t0=$(date +%s.%N); since() { awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}"; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks/styles'); from small_files import make_folder; make_folder('/tmp/small-files-jpeg', 48000)"
echo "files made at $(since) s"
PYTHONFAULTHANDLER=1 timeout 240 python3 -m profiling run --formats text,json --output-dir "$d/new" -- \
    benchmarks/styles/small_files.py --epochs 4 --files 48000 > "$d/new.log" 2>&1 &
pid=$! ended=
while kill -0 $pid 2>/dev/null; do
    if [ -z "$ended" ] && grep -q "^epoch 3" "$d/new.log"; then ended=$(date +%s.%N); echo "last epoch done at $(since) s"; fi
    if [ -n "$ended" ] && awk "BEGIN{exit !($(date +%s.%N) - $ended > 40)}"; then
        ps -eo pid,ppid,stat,etime,args --forest | grep -v "ps -eo" > "$d/ps.txt"
        echo "still running 40 s after the last epoch: SIGABRT to $(pgrep -o -f kernprof_entry)"
        kill -ABRT "$(pgrep -o -f kernprof_entry)"; break
    fi
    sleep 1
done
wait $pid; echo "profile ended at $(since) s, rc $?"
grep -m2 "num_workers = \|Measured in your run" "$d/new.log"
cp "$d"/new/*.report.json "$d/new.report.json" 2>/dev/null; cp "$d"/new/*.loaders.json "$d/new.loaders.json" 2>/dev/null; rm -rf "$d/new"
k=$(python3 -c "import json; print(json.load(open('$d/new.report.json'))['advice']['num_workers'])" 2>/dev/null) || exit 0
timeout 230 python3 benchmarks/rotation_judge.py --workers 2,4,6,8,12 --advice "$k" --replicas 1 --rounds 8 \
    --window 1.5 --warmup 0.5 --out "$d/judge" -- benchmarks/styles/small_files.py --epochs 20 --files 48000 > "$d/judge.log" 2>&1
echo "small_files judged at $(since) s: $(tail -1 "$d/judge.log")"
rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
