set -x
cd .gpu-36; . ./setup36.sh
R=/tmp/res; mkdir -p $R; trap 'tar czf $OUT/res.tgz -C $R .' EXIT
ldd /tmp/deb/usr/sbin/sshd /tmp/deb/usr/bin/sshfs /tmp/deb/usr/bin/ssh | grep "not found"
python3 -m small_files generate /tmp/sf --train 50000 --val 1000 && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024
timeout 60 python3 -m small_files sshfs /tmp/sf/shards-1024 -- ls {mount} 2>&1 | head -3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep "Model name"
timeout 470 python3 benchmarks/small_files_gpu.py --root /tmp/sf --out-dir $R/table --decode-batches 20 -- --batch-size 256 --amp --channels-last --cuda-graph 2>&1 | grep -v '^{"source'
timeout 60 python3 -m pytest tests/test_small_files_decode.py -q -p no:warnings -x -k "gpu or nvjpeg" > $R/pytest.txt 2>&1; tail -25 $R/pytest.txt
