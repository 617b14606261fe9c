# one device call: lesson 09's table with the workers decoding (nvJPEG share 0) beside nvJPEG and the CPU path
. .gpu36/setup.sh
R=/tmp/res; mkdir -p $R; trap 'tar czf $OUT/res.tgz -C $R .' EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt
t0=$(date +%s); python3 -m small_files generate /tmp/sf --train ${N:-100000} --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024 >/dev/null; echo "data in $(( $(date +%s) - t0 )) s"
timeout 60 python3 -m small_files sshfs /tmp/sf/shards-1024 -- ls {mount} 2>&1 | head -2
T="--batch-size 256 --amp --channels-last --cuda-graph"
B="python3 benchmarks/small_files_gpu.py --root /tmp/sf --train ${N:-100000}"
timeout 200 $B --out-dir $R/sshfs-share0 --places sshfs --caches cold --decodes gpu -- $T --gpu-decode-share 0 2>&1 | grep -v '^{"source'
timeout 200 $B --out-dir $R/sshfs-nvjpeg --places sshfs --caches cold --decodes gpu -- $T 2>&1 | grep -v '^{"source'
timeout 100 $B --out-dir $R/local-share0 --places local --caches warm --decodes gpu --sources shards -- $T --gpu-decode-share 0 2>&1 | grep -v '^{"source'
timeout 150 $B --out-dir $R/sshfs-cpu --places sshfs --caches cold --decodes cpu --sources shards -- $T 2>&1 | grep -v '^{"source'
