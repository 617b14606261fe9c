# Issue 36, third call: 300,000 images, 4x4, 8x8 and 16x16 sheets, 2 to 4 GPU-decode threads. From the repository root on a GPU node:
#   TAG=x N=300000 bash docs/results/issue36-threads/run3.sh      (after . .gpu36/setup.sh, which the call sources)
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt; lscpu | grep -i "model name" >> $R/machine.txt
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__)" >> $R/machine.txt; cat $R/machine.txt
t0=$(date +%s); python3 -m small_files generate /tmp/sf --train $N --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024-tile4 --tile 4 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024-tile8 --tile 8 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024-tile16 --tile 16 >/dev/null; sync; echo "data in $(( $(date +%s) - t0 )) s (synced)"
T="--batch-size 256 --amp --channels-last --cuda-graph"
row() { # name source place cache decode [extra train flags]
  local name=$1 src=$2 pl=$3 ca=$4 de=$5; shift 5
  timeout 90 python3 benchmarks/small_files_gpu.py --root /tmp/sf --train $N --places $pl --caches $ca --decodes $de --sources $src --workers 14 $BENCH --out-dir $R/$name -- $T "$@" > $R/$name.out 2>&1
  python3 - $R/$name <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/rows.json"))[-1]
print(sys.argv[1].split("/")[-1], r.get("error") or f"{r['images_per_s']:.0f} img/s GPU {r['gpu_util_pct']:.0f}% datawait {r['data_wait_pct']:.0f}% loaderwait {r['loader_wait_pct']:.0f}% threads {r.get('decode_threads')} tile {r.get('tile')} after 1 s: GPU {sum(u for t, u in r['gpu_trace'] if t >= 1) / max(1, sum(t >= 1 for t, _ in r['gpu_trace'])):.0f}%")
PY
  tar czf $OUT/res-$TAG.tgz -C $R . 2>/dev/null
}
BENCH="--tile 8"
row tile8-3t tiled sshfs cold gpu --gpu-decode-threads 3
row tile8-4t tiled sshfs cold gpu --gpu-decode-threads 4
BENCH="--tile 16"
row tile16-3t tiled sshfs cold gpu --gpu-decode-threads 3
BENCH=
row tiled-2t tiled sshfs cold gpu --gpu-decode-threads 2
row folder-3t folder sshfs cold gpu --gpu-decode-threads 3
rm -rf /tmp/sf
# on a node not seen before, and with time left: the 4-epoch accuracy pair again
if ! grep -q -e a0c92b44 -e 8fb07f24 $R/machine.txt && [ $SECONDS -lt 380 ]; then
t0=$(date +%s); python3 -m small_files generate /tmp/acc --train 50000 --val 1000 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/shards-1024 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/tiled --tile 4 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/tiled8 --tile 8 >/dev/null && sync; echo "acc data in $(( $(date +%s) - t0 )) s"
acc() { # tag data flags
  local tag=$1 data=$2; shift 2
  timeout 100 python3 small_files/train.py --data $data --val /tmp/acc/val --epochs 4 --num-workers 14 --batch-size 256 --amp --channels-last --cuda-graph --warmup-steps 10 --metrics-json $R/acc-$tag.json "$@" > $R/acc-$tag.log 2>&1
  tar czf $OUT/res-$TAG.tgz -C $R . 2>/dev/null
  echo "acc $tag: $(python3 -c "import json; m=json.load(open('$R/acc-$tag.json')); s=m['settings']; print(round(m['images_per_sec']), m['test_accuracy'], [round(x,2) for x in m['epoch_seconds']], 'threads', s.get('gpu_decode_threads'), 'tile', s.get('tile'))")"; grep "Test set" $R/acc-$tag.log | tail -4 | cut -c1-80
}
acc tiled-gpu-2t /tmp/acc/tiled --decode gpu --gpu-decode-threads 2
acc tiled8-gpu-3t /tmp/acc/tiled8 --decode gpu --gpu-decode-threads 3
acc shards-cpu /tmp/acc/shards-1024 --decode cpu
rm -rf /tmp/acc
fi
