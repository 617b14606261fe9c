#!/bin/bash
# Backs docs/results.md, "More loader workers than CPUs".
# The job checker's levels for cpus-for-workers and workers-from-node-cores: lesson 1's epoch with the job's CPUs fixed (taskset holds the
# process tree to CPUS cores, as --cpus-per-task does) and the workers at the kit's rule, at the
# CPU count, at twice it and at the node's cores, the settings taking turns over PASSES passes.
#   bash benchmarks/workers_over_cpus.sh OUT [CPUS] [PASSES]
# CPU smoke test: DEVICE=cpu SAMPLES=640 bash benchmarks/workers_over_cpus.sh /tmp/woc 2 1
set -euo pipefail
OUT=${1:?usage: workers_over_cpus.sh OUT [CPUS] [PASSES]}
CPUS=${2:-4}
PASSES=${3:-3}
PY=${PYTHON:-python3}
SAMPLES=${SAMPLES:-60000}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT"
node=$(nproc --all)
gpus=$([ "$DEVICE" = cuda ] && echo 1 || echo 0)
rule=$("$PY" profiling/cpu_rule.py workers "$CPUS" --gpus "$gpus")
held=$(seq -s, 0 $((CPUS - 1)))
settings=$(printf '%s\n' "$rule" "$CPUS" $((2 * CPUS)) "$node" | awk '$1 > 0' | sort -nu | tr '\n' ' ')
echo "node $node cores, job held to CPUs $held; workers: $settings (the kit's rule gives $rule)" | tee "$OUT/setup.txt"
for pass in $(seq 1 "$PASSES"); do
  for k in $settings; do
    taskset -c "$held" "$PY" mnist_classify.py --synthetic --data-dir "$OUT/data" --train-samples "$SAMPLES" \
      --test-samples 1000 --epochs 2 --device "$DEVICE" --num-workers "$k" --log-interval 100000 \
      --metrics-json "$OUT/w$k-p$pass.json" > "$OUT/w$k-p$pass.log" 2>&1
    "$PY" -c "import json,sys; m=json.load(open(sys.argv[1])); print(f'pass {sys.argv[2]} workers {sys.argv[3]:>3}: warm epoch {m[\"epoch_seconds\"][-1]:.2f} s')" \
      "$OUT/w$k-p$pass.json" "$pass" "$k" | tee -a "$OUT/epochs.txt"
  done
done
