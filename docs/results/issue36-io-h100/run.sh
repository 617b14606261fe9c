# one device call: lesson 09 reads with 1 worker, bytes only, local warm/cold and sshfs cold, 3 repeats (issue 36's last sub-goal)
. .gpu36/setup.sh
{ nvidia-smi --query-gpu=name,uuid --format=csv,noheader; nproc; lscpu | grep -i "model name"; git log -1 --format=%H; } > $OUT/machine.txt
for rep in 1 2 3; do
  t0=$(date +%s)
  timeout 170 python3 benchmarks/small_files_io.py --root /tmp/sfio --train 20000 --per-shard 1024 --workers 1 \
      --samples 5000 --decoded-samples 0 --readers index --out-dir $OUT/io-rep$rep > $OUT/io-rep$rep.log 2>&1
  echo "rep $rep rc=$? in $(( $(date +%s) - t0 )) s"; cat $OUT/io-rep$rep/table.md
done
