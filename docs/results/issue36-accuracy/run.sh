# one device call: accuracy after 4 epochs on the shards, the workers decoding + GPU crops vs nvJPEG vs the CPU path
. .gpu36/setup.sh
R=/tmp/res-acc; mkdir -p $R; trap "tar czf $OUT/res-acc.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt
python3 -m small_files generate /tmp/sf --train 50000 --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024 >/dev/null && sync
for mode in "gpu --gpu-decode-share 0" "gpu" "cpu"; do
  tag=$(echo $mode | tr -d ' -'); timeout 150 python3 small_files/train.py --data /tmp/sf/shards-1024 --val /tmp/sf/val --decode $mode --epochs 4 --num-workers 14 --batch-size 256 --amp --channels-last --cuda-graph --warmup-steps 10 --metrics-json $R/acc-$tag.json > $R/acc-$tag.log 2>&1
  echo "$mode: $(python3 -c "import json; m=json.load(open('$R/acc-$tag.json')); print(round(m['images_per_sec']), m['test_accuracy'], [round(s,2) for s in m['epoch_seconds']])")"; grep "Test set" $R/acc-$tag.log | tail -4
done
