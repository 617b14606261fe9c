# call 1 (first version of --decode gpu: decoding on the main thread, no --cuda-graph)
set -x
cd .gpu-36; . ./setup36.sh
R=/tmp/res; mkdir -p $R
trap 'tar czf $OUT/res.tgz -C $R .' EXIT
head -2 /etc/os-release; uname -r; ls -l /dev/fuse; nproc; which ssh sshfs fusermount3 ssh-keygen vmtouch
python3 -c "from small_files import remote; print('sshfs problem:', remote.missing_tools())"
python3 -m small_files generate /tmp/sf --train 50000 --val 1000
python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024
timeout 60 python3 -m small_files sshfs /tmp/sf/shards-1024 -- ls {mount} | head -3
timeout 120 python3 -m pytest tests/test_small_files_decode.py -q -p no:warnings 2>&1 | tail -3
timeout 300 python3 benchmarks/small_files_gpu.py --root /tmp/sf --out-dir $R/local --places local -- --batch-size 256 --amp --channels-last 2>&1 | tail -12
for d in gpu cpu; do timeout 100 python3 small_files/train.py --data /tmp/sf/shards-1024 --val /tmp/sf/val --decode $d --epochs 4 --num-workers 14 --batch-size 256 --amp --channels-last --warmup-steps 10 --metrics-json $R/acc-$d.json > $R/acc-$d.log 2>&1; tail -2 $R/acc-$d.log; done
