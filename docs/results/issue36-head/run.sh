# one device call at 830db34: CUDA tests of lesson 09, accuracy with batch slots vs the CPU path, local disk shards vs folder (3 interleaved reps), one sshfs-cold pair; setup.sh is ../issue36-h100/setup.sh (copied to .gpu36/ on the node)
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt; lscpu | grep -i "model name" >> $R/machine.txt; git log -1 --format=%H >> $R/machine.txt
t0=$(date +%s); timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_small_files_decode.py > $R/pytest-decode.log 2>&1; echo "pytest rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 $R/pytest-decode.log)"
t0=$(date +%s); python3 -m small_files generate /tmp/acc --train 50000 --val 1000 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/shards-1024 >/dev/null && sync; echo "acc data in $(( $(date +%s) - t0 )) s"
for mode in "gpu --gpu-decode-share 0" "cpu"; do
  tag=$(echo $mode | tr -d ' -'); timeout 150 python3 small_files/train.py --data /tmp/acc/shards-1024 --val /tmp/acc/val --decode $mode --epochs 4 --num-workers 14 --batch-size 256 --amp --channels-last --cuda-graph --warmup-steps 10 --metrics-json $R/acc-$tag.json > $R/acc-$tag.log 2>&1
  echo "$mode: $(python3 -c "import json; m=json.load(open('$R/acc-$tag.json')); print(round(m['images_per_sec']), m['test_accuracy'], [round(s,2) for s in m['epoch_seconds']])")"; grep "Test set" $R/acc-$tag.log | tail -4
done
rm -rf /tmp/acc
t0=$(date +%s); python3 -m small_files generate /tmp/sf --train $N --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024 >/dev/null; sync; echo "data in $(( $(date +%s) - t0 )) s (synced)"
T="--batch-size 256 --amp --channels-last --cuda-graph --gpu-decode-share 0"
row() { # name sources extra-bench-args
  local name=$1 src=$2; shift 2
  timeout 150 python3 benchmarks/small_files_gpu.py --root /tmp/sf --train $N --places sshfs --caches cold --decodes gpu --sources $src --workers 14 --out-dir $R/$name "$@" -- $T > $R/$name.out 2>&1
  python3 - $R/$name <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/rows.json"))[-1]
print(sys.argv[1].split("/")[-1], r.get("error") or f"{r['images_per_s']:.0f} img/s GPU {r['gpu_util_pct']:.0f}% loaderwait {r['loader_wait_pct']:.0f}%")
PY
}
row new-1 shards
row folder-1 folder
for rep in 1 2 3; do
  row localshards-$rep shards --places local --caches warm
  row localfolder-$rep folder --places local --caches warm
done
