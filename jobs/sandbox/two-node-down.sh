#!/usr/bin/env bash
# two-node-down.sh: stop the two-node cluster that two-node-up.sh started, and nothing else.
#
# Cancels its jobs, stops its two slurmd and its slurmctld (their private namespaces, and the
# bind-mounted hosts files in them, go with them), kills any job process left on the two nodes,
# and removes their cgroup folders, spool and pid files. The one-node sandbox, munged and
# slurmdbd keep running. Kept: the config and logs, and the controller's state, so that job ids
# keep counting up (slurmdbd already holds the records of the old ids). Safe to run again.
set -uo pipefail
PROG=two-node-down
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=two-node.sh
source "$SANDBOX_DIR/two-node.sh"
export SLURM_CONF=$TWO_CONF

if pid_in "$TWO_RUN/slurmctld.pid" slurmctld >/dev/null; then cancel_all_jobs; fi

status=0
for pid in $(two_node_pids); do
  comm=$(cat "/proc/$pid/comm" 2>/dev/null)
  if stop_pid "$comm" "$pid"; then log "stopped $comm (pid $pid)"; else echo "$PROG: ERROR: could not stop $comm (pid $pid)" >&2; status=1; fi
done
# What a node leaves when it dies with jobs on it: slurmstepd and the job's processes, all in the
# node's cgroups. Kill them, then remove the (now empty) folders, deepest first.
for cg in $(two_node_cgroups); do
  for pid in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do kill -KILL "$pid" 2>/dev/null; done
done
for cg in $(two_node_cgroups); do
  for _ in $(seq 50); do find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null; [ -d "$cg" ] || break; sleep 0.1; done
  [ -d "$cg" ] && { echo "$PROG: ERROR: could not remove $cg" >&2; status=1; }
done
rm -rf "$TWO_ROOT/spool" "$TWO_RUN"
log "two-node cluster stopped"
exit $status
