#!/usr/bin/env bash
# start-requeued.sh JOBID: start a requeued job as soon as Slurm allows it.
#
# Why: after a requeue Slurm holds the job until its EligibleTime (requeue + cred_expire + 1 s) and
# then starts it at the next scheduler pass. `scontrol update StartTime=now` skips the wait for that
# pass, but sent BEFORE EligibleTime it relaunches the job with its revoked credential and the job
# ends FAILED ("Killing non-startable batch job: Job credential revoked", seen in slurmctld.log).
# So wait until the job is pending again and its EligibleTime has passed, then ask once.
# Exits 0 once asked, or when the job has already restarted or left the queue; 1 after 120 s or when
# scontrol refuses for any other reason.
set -euo pipefail
job=${1:?usage: start-requeued.sh JOBID}
for _ in $(seq 240); do
    info=$(timeout 10 scontrol -o show job "$job" 2>/dev/null) || exit 0   # gone from the queue
    state=$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2)
    eligible=$(grep -o 'EligibleTime=[^ ]*' <<<"$info" | cut -d= -f2)
    restarts=$(grep -o 'Restarts=[0-9]*' <<<"$info" | cut -d= -f2)
    # The scheduler may have started it on its own already (scontrol still shows finished jobs).
    [[ $state != PENDING && ${restarts:-0} -ge 1 ]] && exit 0
    if [[ $state == PENDING && $eligible != Unknown && $eligible != None ]] \
        && (( $(date +%s) > $(date -d "$eligible" +%s) )); then
        # The scheduler may start it between that look and this request: then the job is no longer
        # pending, which is what we wanted.
        if ! said=$(timeout 10 scontrol update jobid="$job" StartTime=now 2>&1); then
            grep -q "no longer pending" <<<"$said" && exit 0
            echo "start-requeued: $said" >&2
            exit 1
        fi
        exit 0
    fi
    sleep 0.5
done
echo "start-requeued: job $job was not pending and eligible within 120 s" >&2
exit 1
