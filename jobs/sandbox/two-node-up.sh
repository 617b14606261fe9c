#!/usr/bin/env bash
# two-node-up.sh: start a second Slurm cluster, "twonode", with two compute nodes n1 and n2 on
# this machine, beside the one-node sandbox (which it starts if munged or slurmdbd is not running).
#
# Its own slurmctld (port 6837) and state, and two slurmd daemons. Each slurmd runs in its own UTS
# and mount namespace: hostname n1 or n2, and a private /etc/hosts (bind-mounted, so the system's
# file is untouched) in which n1 is 127.0.1.1 and n2 is 127.0.1.2, addresses every Linux has on
# `lo`. Jobs on the two nodes therefore see two hosts with their own names and addresses that
# resolve, which is what torchrun's rendezvous needs. munged and slurmdbd (with MariaDB) are the
# one-node sandbox's, never restarted or reconfigured here: one slurmdbd serves both clusters.
# Clients use it with
#     export SLURM_CONF=/var/lib/slurm-two-node/etc/slurm.conf
# Safe to run again; stop it with two-node-down.sh. Knob: SANDBOX_CGROUP=auto|v1|none.
# shellcheck disable=SC2034  # the template fields are read through ${!key} in render_keys()
set -euo pipefail
PROG=two-node-up
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source-path=SCRIPTDIR source=two-node.sh
source "$SANDBOX_DIR/two-node.sh"

CGROUP=${SANDBOX_CGROUP:-auto}
[[ $CGROUP =~ ^(auto|v1|none)$ ]] || die "SANDBOX_CGROUP must be auto, v1 or none, got '$CGROUP'"

install -d -m 0755 "$TWO_ROOT/etc" "$TWO_ROOT/fake-gpu" "$TWO_RUN"
install -d -o slurm -g slurm -m 0755 "$TWO_ROOT/state" "$TWO_ROOT/log"

# ---- 1. the shared daemons (munged, MariaDB, slurmdbd). When they run, they are left exactly as
# they are (the one-node sandbox may be in use); otherwise the one-node sandbox's own script
# starts them, with the rest of that sandbox.
munged_pid=$(pid_in /run/munge/munged.pid munged) || true
dbd_pid=$(pid_in /run/slurmdbd.pid slurmdbd) || true
if [ -z "$munged_pid" ] || [ -z "$dbd_pid" ]; then
  log "munged or slurmdbd is not running: starting the one-node sandbox (jobs/sandbox/slurm-up.sh)"
  bash "$SANDBOX_DIR/slurm-up.sh" >"$TWO_LOG_OUT.shared" 2>&1 \
    || { tail -n 5 "$TWO_LOG_OUT.shared" >&2; die "the one-node sandbox (munged, slurmdbd) did not come up"; }
  munged_pid=$(pid_in /run/munge/munged.pid munged) dbd_pid=$(pid_in /run/slurmdbd.pid slurmdbd)
fi
log "shared daemons: munged (pid $munged_pid) and slurmdbd (pid $dbd_pid)"

# ---- 2. configuration
HOST=$(hostname -s)
read_hardware
MEMORY=$(( MEMORY / 4 > 4096 ? 4096 : MEMORY / 4 ))   # a modest node: both share this machine
choose_cgroup
CONF=$TWO_CONF ROOT=$TWO_ROOT RUN=$TWO_RUN CTLD_PORT=$TWO_CTLD_PORT N1_PORT=${TWO_NODE_PORT[n1]} N2_PORT=${TWO_NODE_PORT[n2]}
render() {
  render_keys "$1" CONF ROOT RUN HOST CTLD_PORT N1_PORT N2_PORT CPUS BOARDS SOCKETS CORES THREADS MEMORY \
    PROCTRACK TASKPLUGIN OVERMEMORY
}
changed=0
update() {  # update FILE CONTENT: write it when it differs
  if ! cmp -s <(printf '%s\n' "$2") "$1"; then printf '%s\n' "$2" > "$1"; changed=1; fi
}
update "$TWO_ROOT/etc/slurm.conf" "$(render "$SANDBOX_DIR/conf/two-node/slurm.conf.in")"
update "$TWO_ROOT/etc/gres.conf" "$(render "$SANDBOX_DIR/conf/two-node/gres.conf.in")"
if [ "$CGROUP" = v1 ]; then
  update "$TWO_ROOT/etc/cgroup.conf" "$(<"$SANDBOX_DIR/conf/cgroup.conf.in")"
elif [ -f "$TWO_ROOT/etc/cgroup.conf" ]; then
  rm -f "$TWO_ROOT/etc/cgroup.conf"; changed=1
fi
# The nodes' /etc/hosts: this machine's, plus the two node names.
update "$TWO_ROOT/etc/hosts" "$(cat /etc/hosts; printf '127.0.1.1 n1\n127.0.1.2 n2')"
for i in 1 2; do
  [ -c "$TWO_ROOT/fake-gpu/n$i-nvidia0" ] || mknod -m 0666 "$TWO_ROOT/fake-gpu/n$i-nvidia0" c 195 $(( i - 1 ))
done
export SLURM_CONF=$TWO_CONF
log "config: nodes n1 n2, $CPUS CPUs and ${MEMORY} MB each, 1 fake GPU (4 shards) each, cgroup=$CGROUP ($( ((changed)) && echo changed || echo unchanged))"

# A changed config restarts the two-node daemons (they hold no one else's state).
if ((changed)) && [ -n "$(two_node_pids)" ]; then
  log "config changed: restarting the two-node daemons"
  bash "$SANDBOX_DIR/two-node-down.sh" >/dev/null || die "could not stop the two-node daemons"
fi

# ---- 3. the cluster in the accounting database (slurmctld would also add it; this is explicit)
if [ -z "$(timeout 10 sacctmgr -n -P show cluster "$TWO_CLUSTER" format=cluster 2>/dev/null)" ]; then
  timeout 10 sacctmgr -i add cluster "$TWO_CLUSTER" >/dev/null || die "sacctmgr could not add cluster $TWO_CLUSTER"
  log "cluster $TWO_CLUSTER added to slurmdbd"
fi

# ---- 4. daemons. wait_for NAME PIDFILE COMM READY: poll until the pid file names a live COMM and
# READY succeeds. (The pid files live in $TWO_RUN, which only this cluster uses.)
wait_for() {
  local name=$1 pidfile=$2 comm=$3 ready=$4 logfile=$5 pid start=$SECONDS
  until pid=$(pid_in "$pidfile" "$comm") && bash -c "$ready" >/dev/null 2>&1; do
    (( SECONDS - start < 30 )) || { show_log "$logfile"; die "$name not ready after 30 s (log: $logfile)"; }
    sleep 0.1
  done
  log "$name started (pid $pid)"
}
if pid=$(pid_in "$TWO_RUN/slurmctld.pid" slurmctld); then
  log "slurmctld already running (pid $pid)"
else
  /usr/sbin/slurmctld </dev/null >>"$TWO_LOG_OUT" 2>&1 || { show_log "$TWO_ROOT/log/slurmctld.log"; die "slurmctld failed to start"; }
  wait_for slurmctld "$TWO_RUN/slurmctld.pid" slurmctld 'timeout 5 scontrol ping | grep -q UP' "$TWO_ROOT/log/slurmctld.log"
fi
for node in n1 n2; do
  if pid=$(pid_in "$TWO_RUN/slurmd-$node.pid" slurmd); then log "slurmd $node already running (pid $pid)"; continue; fi
  install -d -m 0755 "$TWO_ROOT/spool/$node"
  # The namespaces live as long as the daemon (and the job steps it forks) does: nothing to undo.
  unshare --uts --mount --propagation private \
    sh -c "hostname $node && mount --bind '$TWO_ROOT/etc/hosts' /etc/hosts && exec /usr/sbin/slurmd -N $node" \
    </dev/null >>"$TWO_LOG_OUT" 2>&1 || { show_log "$TWO_ROOT/log/slurmd-$node.log"; die "slurmd $node failed to start"; }
  wait_for "slurmd-$node" "$TWO_RUN/slurmd-$node.pid" slurmd true "$TWO_ROOT/log/slurmd-$node.log"
done

# ---- 5. wait for both nodes; a drain reason left from an earlier failed start is cleared once.
resumed=0 deadline=$(( SECONDS + 60 ))
while :; do
  states=$(timeout 5 sinfo -h -N -o '%N=%T' 2>/dev/null | sort -u | xargs) || true
  [[ $states =~ ^n1=(idle|mixed|allocated|completing)\ n2=(idle|mixed|allocated|completing)$ ]] && break
  if [[ $states =~ drain|inval ]] && (( !resumed )); then
    log "nodes are $states: resuming them"
    timeout 5 scontrol update nodename=n1,n2 state=resume >/dev/null 2>&1 || true
    resumed=1
  fi
  (( SECONDS < deadline )) || { show_log "$TWO_ROOT/log/slurmctld.log"; die "nodes not up after 60 s: ${states:-no answer}"; }
  sleep 0.1
done
log "ready: nodes $states; use it with: export SLURM_CONF=$TWO_CONF"
