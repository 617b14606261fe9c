# issue 36, tiled sheets: CUDA tests, accuracy (tiled + nvJPEG engines vs CPU path), sshfs-cold rows
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt; lscpu | grep -i "model name" >> $R/machine.txt; cat $R/machine.txt
t0=$(date +%s); timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_small_files_decode.py > $R/pytest-decode.log 2>&1; echo "pytest rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 $R/pytest-decode.log)"
t0=$(date +%s); python3 -m small_files generate /tmp/acc --train 50000 --val 1000 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/shards-1024 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/tiled --tile 4 >/dev/null && sync; echo "acc data in $(( $(date +%s) - t0 )) s"
acc() { # tag data flags
  local tag=$1 data=$2; shift 2
  timeout 150 python3 small_files/train.py --data $data --val /tmp/acc/val --epochs 4 --num-workers 14 --batch-size 256 --amp --channels-last --cuda-graph --warmup-steps 10 --metrics-json $R/acc-$tag.json "$@" > $R/acc-$tag.log 2>&1
  tar czf $OUT/res-$TAG.tgz -C $R . 2>/dev/null
  echo "acc $tag: $(python3 -c "import json; m=json.load(open('$R/acc-$tag.json')); print(round(m['images_per_sec']), m['test_accuracy'], [round(s,2) for s in m['epoch_seconds']], m['settings']['jpeg_engines'], m['settings']['tile'])")"; grep "Test set" $R/acc-$tag.log | tail -4
}
acc tiled-gpu /tmp/acc/tiled --decode gpu
acc shards-cpu /tmp/acc/shards-1024 --decode cpu
rm -rf /tmp/acc
t0=$(date +%s); python3 -m small_files generate /tmp/sf --train $N --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024-tile4 --tile 4 >/dev/null; sync; echo "data in $(( $(date +%s) - t0 )) s (synced)"
T="--batch-size 256 --amp --channels-last --cuda-graph"
row() { # name source place cache decode [extra train flags]
  local name=$1 src=$2 pl=$3 ca=$4 de=$5; shift 5
  timeout 150 python3 benchmarks/small_files_gpu.py --root /tmp/sf --train $N --places $pl --caches $ca --decodes $de --sources $src --workers 14 --out-dir $R/$name -- $T "$@" > $R/$name.out 2>&1
  python3 - $R/$name <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/rows.json"))[-1]
print(sys.argv[1].split("/")[-1], r.get("error") or f"{r['images_per_s']:.0f} img/s GPU {r['gpu_util_pct']:.0f}% datawait {r['data_wait_pct']:.0f}% loaderwait {r['loader_wait_pct']:.0f}% engines {r.get('jpeg_engines')} tile {r.get('tile')}")
PY
  tar czf $OUT/res-$TAG.tgz -C $R . 2>/dev/null
}
row tiled-1 tiled sshfs cold gpu
row folder-1 folder sshfs cold gpu
row shards-1 shards sshfs cold gpu
row tiled-tv tiled sshfs cold gpu --no-jpeg-engines
row tiled-2 tiled sshfs cold gpu
row shardscpu-1 shards sshfs cold cpu
row tiled-localwarm tiled local warm gpu
