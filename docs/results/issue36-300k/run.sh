# one device call: a longer cold epoch (N images) with the workers decoding (nvJPEG share 0), several worker counts
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt
[ -d /tmp/sf/shards-1024 ] || { t0=$(date +%s); python3 -m small_files generate /tmp/sf --train $N --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024 >/dev/null; sync; echo "data in $(( $(date +%s) - t0 )) s (synced)"; }
T="--batch-size 256 --amp --channels-last --cuda-graph --gpu-decode-share 0"
B="python3 benchmarks/small_files_gpu.py --root /tmp/sf --train $N --places sshfs --caches cold --decodes gpu"
for w in $WORKERS; do timeout 150 $B --sources shards --workers $w --out-dir $R/shards-w$w -- $T 2>&1 | grep '^| shards'; done
[ -n "$FOLDER" ] && timeout 150 $B --sources folder --out-dir $R/folder-w14 -- $T 2>&1 | grep '^| folder'
