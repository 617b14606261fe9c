#!/usr/bin/env bash
# Wait for a Slurm job (or a whole job array) to finish, print its final state, and exit 1
# unless every part COMPLETED. Quicker than `sbatch --wait`, which checks less and less often.
#   bash lessons/wait-job.sh JOBID [MAX_SECONDS]     (default: 900 s)
set -euo pipefail
job=${1:?usage: wait-job.sh JOBID [MAX_SECONDS]}
limit=${2:-900}
[[ $job =~ ^[0-9]+$ ]] || { echo "wait-job.sh: not a job id: $job" >&2; exit 2; }
start=$SECONDS
while [[ -n "$(timeout 10 squeue -h -j "$job" -o %i 2>/dev/null || true)" ]]; do
    (( SECONDS - start < limit )) || { echo "wait-job.sh: job $job still queued after $limit s" >&2; exit 1; }
    sleep 1
done
# Accounting lags a moment behind the queue: wait until no part is still listed as running.
for _ in $(seq 20); do
    states=$(timeout 10 sacct -X -n -P -j "$job" -o State 2>/dev/null | sort -u | tr '\n' ' ')
    [[ -n "$states" && ! "$states" =~ RUNNING|PENDING|REQUEUED ]] && break
    sleep 0.5
done
states=${states% }
echo "job $job: ${states:-unknown (no accounting record)}"
[[ "$states" == COMPLETED ]]
