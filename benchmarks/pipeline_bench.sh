#!/usr/bin/env bash
# Backs docs/results.md, "Lesson 11: pipeline against DDP".
# Pipeline against data parallel on one host, side by side in one run (lesson 11):
#   1. ResNet-50 bf16 at one global batch: DDP on 2 GPUs, then 1 pipeline x 2 stages with 4, 8 and
#      16 microbatches, each with its ideal (each stage trained alone, --alone);
#   2. a 10.7-billion-parameter MLP with AdamW: one GPU alone (runs out of memory), then 1 x 2 with
#      1F1B and its ideal.
# Prints Markdown tables; every raw result stays as JSON (and the OOM as text) in $OUT.
#
#   bash benchmarks/pipeline_bench.sh                      # 2 GPUs (the 2x H200 machine)
#   LAYOUTS=4 bash benchmarks/pipeline_bench.sh            # 4 GPUs: DDP x 4, 2 x 2 and 1 x 4
#   PIPE_BENCH_TINY=1 bash benchmarks/pipeline_bench.sh    # CPU smoke test: gloo, tiny sizes
#
# Knobs (environment): PY, OUT, GLOBAL_BATCH (ResNet), MICROBATCHES, STEPS, WARMUP, BIG_WIDTH,
# BIG_DEPTH, BIG_BATCH, BIG_MICROBATCHES, SKIP_BIG=1.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-$(command -v python)}
OUT=${OUT:-runs/pipeline_bench/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

if [[ "${PIPE_BENCH_TINY:-0}" == 1 ]]; then
  COMMON="--device cpu --model resnet18 --image-size 32 --classes 10"
  GLOBAL_BATCH=${GLOBAL_BATCH:-32} MICROBATCHES=${MICROBATCHES:-"4 8"} STEPS=${STEPS:-2} WARMUP=${WARMUP:-1}
  BIG="--device cpu --model mlp --width ${BIG_WIDTH:-64} --depth ${BIG_DEPTH:-4} --classes 10 --optimizer adamw"
  BIG_BATCH=${BIG_BATCH:-64} BIG_MICROBATCHES=${BIG_MICROBATCHES:-"8"}
  GPUS=2
else
  COMMON="--device cuda --model resnet50 --amp --channels-last"
  GLOBAL_BATCH=${GLOBAL_BATCH:-512} MICROBATCHES=${MICROBATCHES:-"4 8 16"} STEPS=${STEPS:-20} WARMUP=${WARMUP:-5}
  BIG="--device cuda --model mlp --width ${BIG_WIDTH:-8192} --depth ${BIG_DEPTH:-20} --classes 1000 --optimizer adamw --lr 1e-4 --amp"
  BIG_BATCH=${BIG_BATCH:-4096} BIG_MICROBATCHES=${BIG_MICROBATCHES:-"8 16"}
  GPUS=${LAYOUTS:-2}
  have=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
  (( GPUS <= have )) || { echo "pipeline_bench: needs $GPUS GPUs but only $have are visible" >&2; exit 2; }
fi

run() {  # run NPROC NAME ARGS...: one torchrun, its JSON in $OUT/NAME.json
  local nproc=$1 name=$2
  shift 2
  echo "=== $name (torchrun x $nproc): $*"
  "$PY" -m torch.distributed.run --standalone --nproc-per-node="$nproc" -m multi_gpu.pipeline "$@" \
      --results-json "$OUT/$name.json" 2>&1 | grep -v "^W" | grep -v "^step " || true
  [[ -f "$OUT/$name.json" ]] || { echo "pipeline_bench: $name wrote no results" >&2; return 1; }
}

resnet=(--global-batch "$GLOBAL_BATCH" --steps "$STEPS" --warmup-steps "$WARMUP")
run "$GPUS" "resnet-ddp$GPUS" $COMMON "${resnet[@]}" --stages 1
for m in $MICROBATCHES; do
  run "$GPUS" "resnet-1x$GPUS-mb$m" $COMMON "${resnet[@]}" --stages "$GPUS" --microbatches "$m"
  run "$GPUS" "resnet-1x$GPUS-mb$m-alone" $COMMON "${resnet[@]}" --stages "$GPUS" --microbatches "$m" --alone
  if (( GPUS == 4 )); then
    run 4 "resnet-2x2-mb$m" $COMMON "${resnet[@]}" --stages 2 --microbatches "$m"
    run 4 "resnet-2x2-mb$m-alone" $COMMON "${resnet[@]}" --stages 2 --microbatches "$m" --alone
  fi
done
echo
echo "## ResNet, global batch $GLOBAL_BATCH"
"$PY" -m multi_gpu.pipeline_table "$OUT"/resnet-*.json | tee "$OUT/resnet-table.md"

[[ "${SKIP_BIG:-0}" == 1 ]] && exit 0
echo
echo "=== big model on ONE GPU (expected to run out of memory)"
set +e
"$PY" -m multi_gpu.pipeline $BIG --global-batch "$BIG_BATCH" --steps 2 ${PIPE_BENCH_TINY:+--microbatches 1} \
    > "$OUT/big-one-gpu.txt" 2>&1
echo "exit code $?" >> "$OUT/big-one-gpu.txt"
set -e
grep -E "error|exit code|samples/s" "$OUT/big-one-gpu.txt"
for m in $BIG_MICROBATCHES; do
  run 2 "big-1x2-mb$m" $BIG --global-batch "$BIG_BATCH" --stages 2 --microbatches "$m" --schedule 1f1b --steps 6 --warmup-steps 2
  run 2 "big-1x2-mb$m-alone" $BIG --global-batch "$BIG_BATCH" --stages 2 --microbatches "$m" --steps 6 --warmup-steps 2 --alone
done
echo
echo "## Big MLP, global batch $BIG_BATCH"
"$PY" -m multi_gpu.pipeline_table "$OUT"/big-*.json | tee "$OUT/big-table.md"
