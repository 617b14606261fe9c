# Issue 36, fifth call: the committed default (3 GPU-decode threads, no flag), 300,000 images, 8x8 sheets; and the CUDA tests. From the repository root on a GPU node:
#   TAG=x N=300000 bash docs/results/issue36-threads/run5.sh      (after . .gpu36/setup.sh, which the call sources)
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt; lscpu | grep -i "model name" >> $R/machine.txt
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__)" >> $R/machine.txt; cat $R/machine.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_small_files_tiles.py tests/test_small_files_decode.py -k "decode_gpu or nvjpeg or gpu_paths or threads" > $R/pytest-cuda.txt 2>&1; tail -2 $R/pytest-cuda.txt
t0=$(date +%s); python3 -m small_files generate /tmp/sf --train $N --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024-tile8 --tile 8 >/dev/null; sync; echo "data in $(( $(date +%s) - t0 )) s (synced)"
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
row tile8-default-1 tiled sshfs cold gpu
row tile8-default-2 tiled sshfs cold gpu
BENCH=
row folder-default folder sshfs cold gpu
BENCH="--tile 8"
row tile8-default-3 tiled sshfs cold gpu
rm -rf /tmp/sf
