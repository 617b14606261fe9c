# one device call: where the 16 cores go in a cold sshfs epoch (shards, workers decode, GPU crops), old vs new pack(), ciphers
. .gpu36/setup.sh
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C $R ." EXIT
nvidia-smi -L > $R/machine.txt; nproc >> $R/machine.txt; lscpu | grep -i "model name" >> $R/machine.txt
cp benchmarks/small_files_gpu.py benchmarks/cpu_by_process.py .old36/benchmarks/
[ -d /tmp/sf/shards-1024 ] || { t0=$(date +%s); python3 -m small_files generate /tmp/sf --train $N --val 1000 >/dev/null && python3 -m small_files shard /tmp/sf/train /tmp/sf/shards-1024 >/dev/null; sync; echo "data in $(( $(date +%s) - t0 )) s (synced)"; }
T="--batch-size 256 --amp --channels-last --cuda-graph --gpu-decode-share 0"
row() { # name tree sources extra-bench-args
  local name=$1 tree=$2 src=$3; shift 3
  PYTHONPATH=/tmp/site:$PWD/$tree timeout 150 python3 $tree/benchmarks/small_files_gpu.py --root /tmp/sf --train $N --places sshfs --caches cold --decodes gpu --sources $src --workers ${W:-14} --out-dir $R/$name "$@" -- $T $X > $R/$name.out 2>&1
  python3 - $R/$name <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/rows.json"))[-1]
c = r.get("cores", {})
print(sys.argv[1].split("/")[-1], r.get("error") or f"{r['images_per_s']:.0f} img/s GPU {r['gpu_util_pct']:.0f}% loaderwait {r['loader_wait_pct']:.0f}%",
      " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in c.items()))
PY
}
for rep in $REPS; do
  for v in $VARIANTS; do
    case $v in
      new) row new-$rep . shards ;;
      old) row old-$rep .old36 shards ;;
      gcm) row gcm-$rep . shards --sshfs-options Ciphers=aes128-gcm@openssh.com ;;
      folder) row folder-$rep . folder ;;
      localshards) row localshards-$rep . shards --places local --caches warm ;;
      localfolder) row localfolder-$rep . folder --places local --caches warm ;;
      localcpu) row localcpu-$rep . shards --places local --caches warm --decodes cpu ;;
      foldergcm) row foldergcm-$rep . folder --sshfs-options Ciphers=aes128-gcm@openssh.com ;;
      oldgcm) row oldgcm-$rep .old36 shards --sshfs-options Ciphers=aes128-gcm@openssh.com ;;
      nopin) X=--no-pin-memory row nopin-$rep . shards ;;
      pf4) X="--prefetch-factor 4" row pf4-$rep . shards ;;
    esac
  done
done
