set -x
cd .gpu-36; . ./setup36.sh
R=/tmp/res; mkdir -p $R; trap 'tar czf $OUT/res.tgz -C $R .' EXIT
python3 -m small_files generate /tmp/sf --train 50000 --val 1000 && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024
timeout 60 python3 -m small_files sshfs /tmp/sf/shards-1024 -- ls {mount} 2>&1 | head -3
ssh-keygen -q -t ed25519 -N '' -f /tmp/hk; timeout 3 $SMALL_FILES_SSHD -d -p 2299 -h /tmp/hk -o ListenAddress=127.0.0.1 2>&1 | tail -3
timeout 60 python3 -m pytest tests/test_small_files_decode.py -q -p no:warnings -k "gpu or nvjpeg" > $R/pytest.txt 2>&1; tail -4 $R/pytest.txt
T="--batch-size 256 --amp --channels-last --cuda-graph"
timeout 330 python3 benchmarks/small_files_gpu.py --root /tmp/sf --out-dir $R/sshfs --places sshfs --io-samples 5000 -- $T 2>&1 | grep -v '^{"source'
timeout 130 python3 benchmarks/small_files_gpu.py --root /tmp/sf --out-dir $R/hybrid --places sshfs --caches cold --decodes gpu -- $T --gpu-decode-share 0.4 2>&1 | grep -v '^{"source'
timeout 60 python3 benchmarks/small_files_gpu.py --root /tmp/sf --out-dir $R/hybrid-local --places local --caches warm --decodes gpu --sources shards -- $T --gpu-decode-share 0.4 2>&1 | grep -v '^{"source'
