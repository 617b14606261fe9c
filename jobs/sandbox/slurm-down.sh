#!/usr/bin/env bash
# slurm-down.sh: stop the sandbox that slurm-up.sh started, and nothing else.
#
# Cancels the sandbox's jobs, then stops the daemons in reverse start order. Only PIDs that
# slurm-up.sh recorded in /run/slurm-sandbox are touched, and each only if /proc/PID/comm still
# names the expected daemon (a PID may have been reused). Safe to run again.
#   SANDBOX_KEEP_JOBS=1   do not cancel jobs first
set -uo pipefail
PROG=slurm-down
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

if [ -z "$(ls -A "$RUN" 2>/dev/null)" ]; then log "nothing to stop"; exit 0; fi

# Cancel jobs first, so that no job processes outlive slurmd.
if [ "${SANDBOX_KEEP_JOBS:-0}" != 1 ] && pid_in "$RUN/slurmctld.pid" slurmctld >/dev/null; then
  cancel_all_jobs
fi

status=0
for i in 4 3 2 1 0; do
  read -r name comm pidfile <<<"${DAEMONS[$i]}"
  [ -s "$RUN/$name.pid" ] || continue
  pid=$(tr -dc 0-9 < "$RUN/$name.pid")
  if ! pid_in "$RUN/$name.pid" "$comm" >/dev/null; then
    log "$name (pid $pid) is gone or is no longer $comm: leaving it alone"
  elif stop_pid "$name" "$pid"; then
    log "stopped $name (pid $pid)"
    # slurmctld and slurmdbd run as user slurm and cannot remove their pid files from /run;
    # a stale one breaks Debian's maintainer scripts (e.g. apt-get remove slurmctld).
    [ -f "$pidfile" ] && [ "$(tr -dc 0-9 < "$pidfile")" = "$pid" ] && rm -f "$pidfile"
  else
    echo "$PROG: ERROR: could not stop $name (pid $pid)" >&2; status=1; continue
  fi
  rm -f "$RUN/$name.pid"
done
rmdir "$RUN" 2>/dev/null
exit $status
