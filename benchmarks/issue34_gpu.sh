#!/usr/bin/env bash
# Backs docs/results.md, "Issue 34: the advice measured in the user's own loop".
# Issue 34 on a GPU node, from the repo root: each script of benchmarks/styles profiled by `profiling run`
# and judged by `profiling sweep --repeats 3` (benchmarks/own_styles_advice.sh); PART picks the scripts:
# a (tiny_mlp, conv_default1) and c (augment_heavy, small_files, cpu_mixup), a device call each, or c1 and mixup
# (c split in two, so that cpu_mixup finishes); 1 and quick
# are the earlier calls; long-a, long-b and long-c judge all five on runs long enough for six rounds of turns. PART=overhead times a compute-bound script plain and under `profiling run`
# (3 interleaved passes; WIDTH and SAMPLES size it). judge-* (tiny, conv, files, aug, mixup): one script a call, the
# sweep timing several seconds a run inside one epoch. rotate-a|b|c: the advice judged by benchmarks/rotation_judge.py.
set -uo pipefail
OUT=${OUT:-runs/issue34}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; python3 -c "import torch, line_profiler; print(torch.__version__, line_profiler.__version__)"; } > "$OUT/machine.txt" 2>&1
judge() {  # NAME TIMEOUT WORKERS BATCHES -- SCRIPT ARGS
    local name=$1 limit=$2 workers=$3 batches=$4; shift 5
    timeout "$limit" bash benchmarks/own_styles_advice.sh "$OUT/$name" "$workers" 3 "$batches" -- "$@" \
        || echo "{\"$name\": \"stopped at ${limit} s or failed\"}" >> "$OUT/$name/verdict.json"
    grep -m1 "num_workers = " "$OUT/$name/profile.log" || true
}
finish() {  # what travels back: the verdicts, logs and records, not the profiles' plots and the sweeps' folders
    for d in "$OUT"/*/; do
        rm -rf "$d"sweep/w* "$d"sweep/repeat* "$d"sweep/profile "$d"profile/*.png "$d"profile/*.lprof "$d"profile/*.html 2>/dev/null
        cat "$d"verdict.json 2>/dev/null
    done
}
trap finish EXIT
case ${PART:-1} in
1)
    judge tiny_mlp 190 2,4,8,12,14 300 -- benchmarks/styles/tiny_mlp.py --epochs 3 --samples 30000
    judge conv_default1 190 2,4,8,12,14 300 -- benchmarks/styles/conv_default1.py --epochs 3 --samples 30000
    judge augment_heavy 190 2,4,8,12,14 120 -- benchmarks/styles/augment_heavy.py --epochs 4 --samples 12800 ;;
a)  # one device call (<= 600 s): two judges with 4 swept counts (+ the advice), 200 batches, 3 passes
    judge tiny_mlp 260 2,4,8,12 200 -- benchmarks/styles/tiny_mlp.py --epochs 3 --samples 30000
    judge conv_default1 260 2,4,8,12 200 -- benchmarks/styles/conv_default1.py --epochs 3 --samples 30000 ;;
c)  # one device call (<= 600 s): the other three styles, 4 swept counts (+ the advice), 3 passes
    judge augment_heavy 210 2,4,8,12 100 -- benchmarks/styles/augment_heavy.py --epochs 4 --samples 12800
    judge small_files 210 2,4,8,12 100 -- benchmarks/styles/small_files.py --epochs 4
    judge cpu_mixup 170 2,4,8,12 100 -- benchmarks/styles/cpu_mixup.py --epochs 4 ;;
c1)  # PART=c's first two scripts, with room (a device call)
    judge augment_heavy 280 2,4,8,12 100 -- benchmarks/styles/augment_heavy.py --epochs 4 --samples 12800
    judge small_files 280 2,4,8,12 100 -- benchmarks/styles/small_files.py --epochs 4 ;;
mixup)  # cpu_mixup alone: its profile takes ~60 s and each swept setting ~15 s, more than PART=c leaves it
    judge cpu_mixup 420 2,4,8,12 100 -- benchmarks/styles/cpu_mixup.py --epochs 4 ;;
long-a|long-b|long-c)  # runs of 30-70 s, as a real job gives the trials, and sweeps of longer passes (3 each)
    case ${PART#long-} in
    a) judge tiny_mlp 280 2,4,8,12 600 -- benchmarks/styles/tiny_mlp.py --epochs 10 --samples 60000
       judge conv_default1 280 2,4,8,12 600 -- benchmarks/styles/conv_default1.py --epochs 10 --samples 60000 ;;
    b) judge small_files 270 2,4,8,12 400 -- benchmarks/styles/small_files.py --epochs 10 --files 16000
       # augment_heavy timed 300 batches a run in issue34-long(2), and set B's sweep ran past its 300 s: 200 now
       judge augment_heavy 300 2,4,8,12 200 -- benchmarks/styles/augment_heavy.py --epochs 10 --samples 25600 ;;
    c) judge cpu_mixup 560 2,4,8,12 150 -- benchmarks/styles/cpu_mixup.py --epochs 6 ;;
    esac ;;
judge-tiny|judge-conv|judge-files|judge-aug|judge-mixup)  # a device call each: the sweep times 7-20 s a run
    # (the long-* sweeps timed 1.4-9 s, and runs of one count spread 5-33 %), all inside one epoch (--samples sized)
    case ${PART#judge-} in
    tiny) judge tiny_mlp 560 2,4,8,12 3000 -- benchmarks/styles/tiny_mlp.py --epochs 3 --samples 240000 ;;
    conv) judge conv_default1 560 2,4,8,12 2500 -- benchmarks/styles/conv_default1.py --epochs 3 --samples 192000 ;;
    files) judge small_files 560 2,4,8,12 700 -- benchmarks/styles/small_files.py --epochs 4 --files 48000 ;;
    aug) judge augment_heavy 560 2,4,8,12 500 -- benchmarks/styles/augment_heavy.py --epochs 3 --samples 76800 ;;
    mixup) judge cpu_mixup 560 2,4,8,12 300 -- benchmarks/styles/cpu_mixup.py --epochs 2 --samples 49152 ;;
    esac ;;
rotate-a|rotate-b|rotate-c)  # the advice (set C's runs) judged by benchmarks/rotation_judge.py: one live process a
    # count, paused and resumed in 8 rotated rounds of 1.5 s (docs/results/issue34-rotation), each a device call; the
    # judge trains on the run's own data, more epochs (their restarts fall in windows, as in the user's run)
    rotate() {  # NAME "PROFILE ARGS" "JUDGE ARGS" (each split into words, on purpose)
        local d=$OUT/$1; mkdir -p "$d"
        # shellcheck disable=SC2086
        timeout 150 python3 -m profiling run --formats text,json --output-dir "$d/profile" -- \
            benchmarks/styles/$1.py $2 > "$d/profile.log" 2>&1
        cp "$d"/profile/*.report.json "$d"/profile/*.loaders.json "$d/"; rm -rf "$d/profile"
        local k; k=$(python3 -c "import json, glob; print(json.load(open(glob.glob('$d/*.report.json')[0]))['advice']['num_workers'])")
        # shellcheck disable=SC2086
        timeout 240 python3 benchmarks/rotation_judge.py --workers 2,4,8,12 --advice "$k" --rounds 8 --window 1.5 \
            --out "$d/judge" -- benchmarks/styles/$1.py $3 > "$d/judge.log" 2>&1
        echo "$1: advice $k; $(tail -1 "$d/judge.log")"; rm -f "$d"/judge/*.counter "$d"/judge/*.loaders.json
    }
    case ${PART#rotate-} in
    a) rotate tiny_mlp "--epochs 10 --samples 60000" "--epochs 100 --samples 60000"
       rotate conv_default1 "--epochs 10 --samples 60000" "--epochs 100 --samples 60000" ;;
    b) rotate small_files "--epochs 4 --files 48000" "--epochs 20 --files 48000"
       rotate augment_heavy "--epochs 10 --samples 25600" "--epochs 20 --samples 25600" ;;
    c) rotate cpu_mixup "--epochs 6" "--epochs 60" ;;
    esac ;;
mixup-cost)  # cpu_mixup at 8 workers: plain, profiled trying nothing, profiled held to 8's CPUs, plain under taskset (as the sweep runs it)
    script=(benchmarks/styles/cpu_mixup.py --epochs 4 --num-workers 8)
    for how in plain off held taskset; do
        case $how in
        plain) timeout 100 python3 "${script[@]}" ;;
        off|held) timeout 100 python3 -m profiling run --formats text --try-workers "$([ $how = off ] && echo off || echo 8)" \
                      --output-dir "$OUT/mixup-$how" -- "${script[@]}" ;;
        taskset) timeout 100 taskset -c 0-9 python3 "${script[@]}" ;;
        esac > "$OUT/mixup-$how.log" 2>&1
        echo "$how: $(grep -o 'epoch [0-9] [0-9.]*s' "$OUT/mixup-$how.log" | tr '\n' ' ')"
    done ;;
profiles)  # the advice alone (profiling run), on the scripts PART=a judged
    for name in tiny_mlp conv_default1; do
        mkdir -p "$OUT/$name"
        timeout 120 python3 -m profiling run --formats text,json --output-dir "$OUT/$name/profile" -- \
            benchmarks/styles/$name.py --epochs 3 --samples 30000 > "$OUT/$name/profile.log" 2>&1
        grep -m1 "num_workers = " "$OUT/$name/profile.log"
    done ;;
quick)
    judge tiny_mlp 170 2,4,8,12,14 200 -- benchmarks/styles/tiny_mlp.py --epochs 3 --samples 30000
    judge conv_default1 170 2,4,8,12,14 200 -- benchmarks/styles/conv_default1.py --epochs 3 --samples 30000 ;;
overhead)  # OLD=DIR (a folder holding an earlier commit's profiling/) adds that version to every pass, side by side
    args=(benchmarks/styles/conv_default1.py --epochs 3 --samples "${SAMPLES:-20000}" --width "${WIDTH:-512}")
    root=$PWD out=$(realpath -m "$OUT")
    stamp() { while IFS= read -r l; do printf '%s\n' "$l"; printf '%s %s\n' "$(date +%s.%N)" "$l" >> "$1"; done; }
    for pass in 1 2 3; do
        for how in plain profiled ${OLD:+old}; do
            start=$(date +%s.%N)
            echo "$start start" > "$OUT/overhead-$how-$pass.stamped"  # each line's arrival: start-up and exit apart
            if [ $how = plain ]; then python3 "${args[@]}" 2>&1 | stamp "$OUT/overhead-$how-$pass.stamped" > "$OUT/overhead-$how-$pass.log"
            elif [ $how = old ]; then (cd "$OLD" && python3 -m profiling run --output-dir "$out/old-$pass" -- \
                     "$root/${args[0]}" "${args[@]:1}") > "$OUT/overhead-$how-$pass.log" 2>&1
                 rm -f "$OUT/old-$pass"/*.png "$OUT/old-$pass"/*.html "$OUT/old-$pass"/*.lprof
            else python3 -m profiling run --output-dir "$OUT/overhead-$pass" -- "${args[@]}" 2>&1 \
                     | stamp "$OUT/overhead-$how-$pass.stamped" > "$OUT/overhead-$how-$pass.log"
                 rm -f "$OUT/overhead-$pass"/*.png "$OUT/overhead-$pass"/*.html "$OUT/overhead-$pass"/*.lprof; fi
            echo "$how pass $pass: $(awk "BEGIN{print $(date +%s.%N) - $start}") s" | tee -a "$OUT/overhead.txt"
        done
    done
    python3 benchmarks/overhead_split.py "$OUT" | tee -a "$OUT/overhead.txt" ;;
esac
