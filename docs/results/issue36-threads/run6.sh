# Issue 36, sixth call: 4 epochs of 50,000 images, 8x8 sheets on the GPU (default threads) against the CPU path. From the repository root on a GPU node:
#   TAG=x bash docs/results/issue36-threads/run6.sh      (after . .gpu36/setup.sh, which the call sources)
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt; lscpu | grep -i "model name" >> $R/machine.txt
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__)" >> $R/machine.txt; cat $R/machine.txt
t0=$(date +%s); python3 -m small_files generate /tmp/acc --train 50000 --val 1000 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/shards-1024 >/dev/null && python3 -m small_files shard /tmp/acc/train /tmp/acc/tiled8 --tile 8 >/dev/null && sync; echo "acc data in $(( $(date +%s) - t0 )) s"
acc() { # tag data flags
  local tag=$1 data=$2; shift 2
  timeout 100 python3 small_files/train.py --data $data --val /tmp/acc/val --epochs 4 --num-workers 14 --batch-size 256 --amp --channels-last --cuda-graph --warmup-steps 10 --metrics-json $R/acc-$tag.json "$@" > $R/acc-$tag.log 2>&1
  tar czf $OUT/res-$TAG.tgz -C $R . 2>/dev/null
  echo "acc $tag: $(python3 -c "import json; m=json.load(open('$R/acc-$tag.json')); s=m['settings']; print(round(m['images_per_sec']), m['test_accuracy'], [round(x,2) for x in m['epoch_seconds']], 'threads', s.get('gpu_decode_threads'), 'tile', s.get('tile'))")"; grep "Test set" $R/acc-$tag.log | tail -4 | cut -c1-80
}
acc tiled8-gpu-default /tmp/acc/tiled8 --decode gpu
acc shards-cpu /tmp/acc/shards-1024 --decode cpu
rm -rf /tmp/acc
