#!/usr/bin/env bash
# Backs docs/results.md, "Lessons 5 and 6: DDP scaling on one host".
# DDP scaling on one host: MNIST DDP and ResNet bf16 DDP on 1, 2, ... GPUs, plus the cost of a
# checkpoint and the time from a preemption signal to exit. Prints Markdown tables; every raw
# result stays as JSON in $OUT. Offline: the data is generated, ResNet uses weights=None.
#
#   bash benchmarks/ddp_scaling.sh                       # 1 vs 2 GPUs (the 2x H200 machine)
#   GPU_COUNTS="1 2 4 8" bash benchmarks/ddp_scaling.sh  # the scaling curve (issue 8)
#   DDP_BENCH_TINY=1 bash benchmarks/ddp_scaling.sh      # CPU smoke test: gloo, resnet18, 32x32
#   SCALING=strong GPU_COUNTS="1 2" bash benchmarks/ddp_scaling.sh  # fixed GLOBAL batch (lesson 10)
#
# SCALING=weak (the default) keeps the batch PER GPU fixed; SCALING=strong keeps each GLOBAL batch
# of STRONG_RESNET_BATCHES / STRONG_MNIST_BATCHES fixed and splits it over the GPUs, to find the
# per-GPU batch at which more GPUs stop paying (no signal runs); SCALING=both does the two.
# A global batch that does not divide by a GPU count is refused before anything runs (exit 2).
# Knobs (environment): PY, OUT, GPU_COUNTS, SCALING, RESNET_MODEL, RESNET_BATCH (per GPU), RESNET_IMAGE,
# RESNET_WARMUP, RESNET_STEPS, MNIST_TRAIN, MNIST_BATCH (per GPU), MNIST_WORKERS, MNIST_EPOCHS,
# STRONG_RESNET_BATCHES, STRONG_MNIST_BATCHES (global), STRONG_WARMUP, STRONG_STEPS, SIGNAL_GPUS (GPUs for the signal-to-exit
# runs), SIGNAL_AFTER (seconds of training before it). Tables go to stdout and $OUT/summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the kit, for a checkout that is not installed

shopt -s nullglob  # a result pattern with no file (weak-only, strong-only) is simply left out
PY=${PY:-$(command -v python)}
OUT=${OUT:-runs/ddp_scaling/$(date +%Y%m%d-%H%M%S)}
DATA=${DATA:-runs/ddp_scaling/data}
SCALING=${SCALING:-weak}
case "$SCALING" in weak|strong|both) ;; *) echo "ddp_scaling: SCALING=$SCALING must be weak, strong or both" >&2; exit 2 ;; esac

if [[ "${DDP_BENCH_TINY:-0}" == 1 ]]; then
  DEVICE=cpu
  GPU_COUNTS=${GPU_COUNTS:-"1 2"}
  RESNET_MODEL=${RESNET_MODEL:-resnet18} RESNET_BATCH=${RESNET_BATCH:-8} RESNET_IMAGE=${RESNET_IMAGE:-32}
  RESNET_WARMUP=${RESNET_WARMUP:-2} RESNET_STEPS=${RESNET_STEPS:-3}
  MNIST_TRAIN=${MNIST_TRAIN:-256} MNIST_BATCH=${MNIST_BATCH:-16} MNIST_WORKERS=${MNIST_WORKERS:-0}
  MNIST_EPOCHS=${MNIST_EPOCHS:-1} SIGNAL_GPUS=${SIGNAL_GPUS:-2} SIGNAL_AFTER=${SIGNAL_AFTER:-2}
  STRONG_RESNET_BATCHES=${STRONG_RESNET_BATCHES:-"8 16"} STRONG_MNIST_BATCHES=${STRONG_MNIST_BATCHES:-"32"}
  STRONG_WARMUP=${STRONG_WARMUP:-$RESNET_WARMUP} STRONG_STEPS=${STRONG_STEPS:-$RESNET_STEPS}
  AMP=""
else
  DEVICE=cuda
  STRONG_RESNET_BATCHES=${STRONG_RESNET_BATCHES:-"32 64 128 256 512"}
  STRONG_MNIST_BATCHES=${STRONG_MNIST_BATCHES:-"256 1024 4096"}
  STRONG_WARMUP=${STRONG_WARMUP:-10} STRONG_STEPS=${STRONG_STEPS:-30}  # many short runs: fewer steps each
  have=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
  GPU_COUNTS=${GPU_COUNTS:-"1 2"}
  for n in $GPU_COUNTS; do
    (( n <= have )) || { echo "ddp_scaling: asked for $n GPUs but only $have are visible" >&2; exit 2; }
  done
  RESNET_MODEL=${RESNET_MODEL:-resnet50} RESNET_BATCH=${RESNET_BATCH:-256} RESNET_IMAGE=${RESNET_IMAGE:-224}
  RESNET_WARMUP=${RESNET_WARMUP:-20} RESNET_STEPS=${RESNET_STEPS:-60}
  MNIST_TRAIN=${MNIST_TRAIN:-60000} MNIST_BATCH=${MNIST_BATCH:-128} MNIST_WORKERS=${MNIST_WORKERS:-6}
  MNIST_EPOCHS=${MNIST_EPOCHS:-2} SIGNAL_GPUS=${SIGNAL_GPUS:-2} SIGNAL_AFTER=${SIGNAL_AFTER:-5}
  AMP="--amp"
fi
# Strong scaling splits one global batch evenly: refuse what does not divide, before any run.
if [[ "$SCALING" != weak ]]; then
  for g in $STRONG_RESNET_BATCHES $STRONG_MNIST_BATCHES; do
    for n in $GPU_COUNTS; do
      (( g % n == 0 )) || { echo "ddp_scaling: global batch $g does not divide evenly over $n GPUs (try $(( g - g % n )) or $(( g - g % n + n )))" >&2; exit 2; }
    done
  done
fi
mkdir -p "$OUT" "$DATA"
max_count=$(tr ' ' '\n' <<<"$GPU_COUNTS" | sort -n | tail -1)
(( SIGNAL_GPUS <= max_count )) || SIGNAL_GPUS=$max_count

launch() {  # launch N ARGS...: the same launcher for every count, so only N changes
  local n=$1; shift
  "$PY" -m torch.distributed.run --standalone --nproc_per_node="$n" "$@"
}

mnist_args=(--synthetic --data-dir "$DATA" --train-samples "$MNIST_TRAIN" --test-samples 1000
            --epochs "$MNIST_EPOCHS" --num-workers "$MNIST_WORKERS" --log-interval 100000
            --device "$DEVICE")
[[ "$MNIST_WORKERS" == 0 ]] || mnist_args+=(--persistent-workers)
resnet_args=(--model "$RESNET_MODEL" --per-gpu-batch "$RESNET_BATCH" --image-size "$RESNET_IMAGE"
             --warmup-steps "$RESNET_WARMUP" --steps "$RESNET_STEPS" --channels-last $AMP
             --device "$DEVICE")

echo "== ddp_scaling: $SCALING scaling, GPU counts [$GPU_COUNTS] on $DEVICE; results in $OUT"
"$PY" - <<'EOF'
import torch
n = torch.cuda.device_count()
print("torch", torch.__version__, "|", n, "GPU(s):", ", ".join(torch.cuda.get_device_name(i) for i in range(n)) or "none")
EOF

fail() { echo "$1 failed; see $2" >&2; tail -20 "$2" >&2; exit 1; }

# 1. throughput at each GPU count (MNIST keeps its batch per GPU fixed, like the ResNet: weak scaling)
[[ "$SCALING" == strong ]] || for n in $GPU_COUNTS; do
  echo "-- MNIST DDP on $n"
  launch "$n" multi_gpu/mnist_ddp.py "${mnist_args[@]}" --batch-size $((MNIST_BATCH * n)) \
    --metrics-json "$OUT/mnist-$n.json" > "$OUT/mnist-$n.log" 2>&1 \
    || { echo "MNIST on $n failed; see $OUT/mnist-$n.log" >&2; tail -20 "$OUT/mnist-$n.log" >&2; exit 1; }
  echo "-- $RESNET_MODEL on $n"
  baseline=(); [[ -f "$OUT/resnet-1.json" ]] && baseline=(--baseline-json "$OUT/resnet-1.json")
  ckpt=(); [[ "$n" == "$max_count" ]] && ckpt=(--checkpoint-dir "$OUT/ckpt-resnet-$n")
  launch "$n" benchmarks/resnet_bench.py "${resnet_args[@]}" "${baseline[@]}" "${ckpt[@]}" \
    --results-json "$OUT/resnet-$n.json" > "$OUT/resnet-$n.log" 2>&1 \
    || { echo "$RESNET_MODEL on $n failed; see $OUT/resnet-$n.log" >&2; tail -20 "$OUT/resnet-$n.log" >&2; exit 1; }
done

# 1b. strong scaling: each global batch on every GPU count, so each GPU's share shrinks
strong_run() {  # strong_run KIND N G SCRIPT ARGS...: global batch G on N GPUs; writes strong-KIND-gG-N.*
  local kind=$1 n=$2 g=$3; shift 3
  echo "-- $kind on $n, global batch $g ($(( g / n )) per GPU)"
  launch "$n" "$@" > "$OUT/strong-$kind-g$g-$n.log" 2>&1 \
    || fail "$kind on $n at global batch $g" "$OUT/strong-$kind-g$g-$n.log"
}
[[ "$SCALING" == weak ]] || for n in $GPU_COUNTS; do
  for g in $STRONG_MNIST_BATCHES; do
    strong_run mnist "$n" "$g" multi_gpu/mnist_ddp.py "${mnist_args[@]}" --batch-size "$g" \
      --metrics-json "$OUT/strong-mnist-g$g-$n.json"
  done
  for g in $STRONG_RESNET_BATCHES; do
    strong_run resnet "$n" "$g" benchmarks/resnet_bench.py "${resnet_args[@]}" --global-batch "$g" \
      --results-json "$OUT/strong-resnet-g$g-$n.json" --warmup-steps "$STRONG_WARMUP" --steps "$STRONG_STEPS"
  done
done

table() {  # the weak and strong tables (and the plot) of every result file so far
  local files
  files=("$OUT"/mnist-*.json "$OUT"/resnet-*.json "$OUT"/strong-*.json)
  "$PY" -m multi_gpu.scaling "${files[@]}" --csv "$OUT/scaling.csv" --plot "$OUT/scaling.png"
}
if [[ "$SCALING" == strong ]]; then
  { echo "# DDP strong scaling ($OUT)"; echo; echo "GPU counts [$GPU_COUNTS], global batches: MNIST [$STRONG_MNIST_BATCHES], $RESNET_MODEL [$STRONG_RESNET_BATCHES]"
    table; } | tee "$OUT/summary.md"
  exit 0
fi

# 2. time from SIGTERM (to torchrun, which passes it to every rank) to exit, with the checkpoint
signal_run() {  # signal_run NAME READY_TEXT ARGS...
  local name=$1 ready=$2; shift 2
  local log="$OUT/signal-$name.log"
  # Not through launch(): $! must be torchrun itself, not a subshell around it.
  "$PY" -m torch.distributed.run --standalone --nproc_per_node="$SIGNAL_GPUS" "$@" > "$log" 2>&1 &
  local pid=$! waited=0
  until grep -q "$ready" "$log"; do
    sleep 0.2; waited=$((waited + 1))
    kill -0 "$pid" 2>/dev/null || { echo "signal run $name ended early; see $log" >&2; return 1; }
    (( waited < 1500 )) || { echo "signal run $name never got ready; see $log" >&2; kill "$pid"; return 1; }
  done
  sleep "$SIGNAL_AFTER"
  local t0 t1
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid" || true
  t1=$(date +%s.%N)
  echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')" >> "$OUT/signal_to_exit.txt"
}
: > "$OUT/signal_to_exit.txt"
echo "-- signal to exit on $SIGNAL_GPUS"
signal_run mnist "training started" multi_gpu/mnist_ddp.py "${mnist_args[@]}" --epochs 1000 \
  --batch-size $((MNIST_BATCH * SIGNAL_GPUS)) --checkpoint-dir "$OUT/ckpt-mnist-signal" \
  --metrics-json "$OUT/signal-mnist.json"
signal_run "$RESNET_MODEL" "training until a signal" benchmarks/resnet_bench.py "${resnet_args[@]}" \
  --until-signal --checkpoint-dir "$OUT/ckpt-resnet-signal" --results-json "$OUT/signal-resnet.json"

# 3. the tables
{
echo
echo "## Throughput and scaling ($OUT)"
table
echo
echo "## Checkpoint cost and signal-to-exit ($SIGNAL_GPUS GPU(s))"
OUT="$OUT" "$PY" - <<'EOF'
import json, os
from pathlib import Path
out = Path(os.environ["OUT"])
def read(name):
    p = out / name
    return json.loads(p.read_text()) if p.exists() else {}
walls = dict(line.split() for line in (out / "signal_to_exit.txt").read_text().splitlines())
m, r = read("signal-mnist.json"), read("signal-resnet.json")
big = max(out.glob("resnet-*.json"), key=lambda p: json.loads(p.read_text())["world_size"])
timed = json.loads(big.read_text())
print("| run | checkpoint size | checkpoint save (s) | signal to checkpoint done (s) | SIGTERM to exit, wall (s) |")
print("|---|---:|---:|---:|---:|")
ck = sorted((out / "ckpt-mnist-signal").glob("ckpt-*.pt"))
size = f"{ck[-1].stat().st_size / 1e6:.1f} MB" if ck else "?"
save = m.get("checkpoint_seconds") or []
print(f"| mnist-ddp | {size} | {save[-1]:.3f} |" if save else "| mnist-ddp | ? | ? |", end="")
sig = m.get("signal_to_checkpointed_seconds")
print(f" {sig:.3f} |" if sig is not None else " ? |", walls.get("mnist", "?"), "|")
name = timed["model"]
size = f"{timed['checkpoint_bytes'] / 1e6:.1f} MB" if timed.get("checkpoint_bytes") else "?"
print(f"| {name} (timed run, {timed['world_size']} GPU) | {size} | {timed.get('checkpoint_seconds', float('nan')):.3f} | - | - |")
sig = r.get("signal_to_checkpointed_seconds")
print(f"| {name} (signal run) | {size} | {r.get('checkpoint_seconds', float('nan')):.3f} |"
      + (f" {sig:.3f} |" if sig is not None else " ? |"), walls.get(name, "?"), "|")
EOF
} | tee "$OUT/summary.md"
