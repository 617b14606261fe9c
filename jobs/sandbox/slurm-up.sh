#!/usr/bin/env bash
# slurm-up.sh: start the kit's one-node Slurm sandbox on this machine (Debian/Ubuntu, as root).
#
# munged -> MariaDB -> slurmdbd -> slurmctld -> slurmd, from Debian's own packages, with fake
# GPUs as GRES so that `#SBATCH --gres=gpu:1` schedules, and real accounting so that sacct, seff
# and submitit work. Safe to run again: what already runs is left alone, and a changed config
# restarts only the daemons this script started. Stop it with slurm-down.sh.
#
# Knobs: SANDBOX_GPUS=2 (fake GPUs, at least 1)   SANDBOX_CGROUP=auto|v1|none
#        SANDBOX_RESET=1 (forget old jobs; daemons must be down)
#        SANDBOX_FORCE=1 (overwrite an /etc/slurm/slurm.conf that this script did not write)
# shellcheck disable=SC2034  # the template fields are read through ${!key} in render()
set -euo pipefail
PROG=slurm-up
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

GPUS=${SANDBOX_GPUS:-2}
CGROUP=${SANDBOX_CGROUP:-auto}
DB_PASS=sandbox-local-only      # MariaDB listens on its unix socket only
[[ $GPUS =~ ^[1-9][0-9]?$ ]] || die "SANDBOX_GPUS must be a number from 1 to 99, got '$GPUS'"
[[ $CGROUP =~ ^(auto|v1|none)$ ]] || die "SANDBOX_CGROUP must be auto, v1 or none, got '$CGROUP'"

# ---- 1. packages (the only slow step, and only the first time)
bash "$SANDBOX_DIR/apt-install.sh" slurm-wlm munge slurmdbd mariadb-server libslurm-perl libslurmdb-perl \
  || die "could not install the Slurm packages (see the apt-install line above)"

# seff comes from Debian's source package (it is in no binary one): fetch it while the daemons start.
seff_job=""
if [ ! -x /usr/local/bin/seff ]; then bash "$SANDBOX_DIR/install-seff.sh" & seff_job=$!; fi

# ---- 2. configuration, rendered from the templates in conf/
if [ -f $ETC/slurm.conf ] && ! grep -qF "$MARKER" $ETC/slurm.conf && [ "${SANDBOX_FORCE:-0}" != 1 ]; then
  die "$ETC/slurm.conf was not written by this script; set SANDBOX_FORCE=1 to replace it"
fi
NODE=$(hostname -s)
[ -n "$NODE" ] || die "hostname -s printed nothing"
read_hardware
(( MEMORY > 2048 )) && MEMORY=$(( MEMORY - 1024 ))   # leave some memory to the OS and the daemons

choose_cgroup
LAST_GPU=$(( GPUS - 1 ))

render() {  # render TEMPLATE: print it with every @KEY@ replaced by $KEY
  render_keys "$1" NODE CPUS BOARDS SOCKETS CORES THREADS MEMORY GPUS LAST_GPU PROCTRACK TASKPLUGIN \
    OVERMEMORY LOGDIR FAKE_GPU_DIR DB_PASS
}
new=$(mktemp -d)
trap 'rm -rf "$new"' EXIT
wanted=(slurm.conf gres.conf slurmdbd.conf)
[ "$CGROUP" = v1 ] && wanted+=(cgroup.conf)
for f in "${wanted[@]}"; do render "$SANDBOX_DIR/conf/$f.in" > "$new/$f"; done

changed=0
install -d -m 0755 $ETC
for f in slurm.conf gres.conf slurmdbd.conf cgroup.conf; do
  if [ -f "$new/$f" ]; then
    cmp -s "$new/$f" "$ETC/$f" && continue
    install -m 0644 "$new/$f" "$ETC/$f"
  elif [ -f "$ETC/$f" ] && grep -qF "$MARKER" "$ETC/$f"; then
    rm -f "$ETC/$f"                      # ours, but not used in this mode (cgroup.conf)
  else
    continue
  fi
  changed=1
done
chown slurm:slurm $ETC/slurmdbd.conf && chmod 0600 $ETC/slurmdbd.conf   # it holds the DB password
log "config: node $NODE, $CPUS CPUs, ${MEMORY} MB, $GPUS fake GPUs, cgroup=$CGROUP ($( ((changed)) && echo changed || echo unchanged))"

# Fake GPUs: Slurm only counts a gpu GRES backed by a character or block device file.
install -d -m 0755 "$FAKE_GPU_DIR"
for i in $(seq 0 $LAST_GPU); do
  [ -c "$FAKE_GPU_DIR/nvidia$i" ] || { rm -f "$FAKE_GPU_DIR/nvidia$i"; mknod -m 0666 "$FAKE_GPU_DIR/nvidia$i" c 195 "$i"; }
done
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld $LOGDIR
install -d -m 0755 /var/spool/slurmd "$RUN"

# A changed config needs a restart of the Slurm daemons (DAEMONS[2..4], last started first);
# only ours may be restarted.
for i in 4 3 2; do
  read -r name comm pidfile <<<"${DAEMONS[$i]}"
  pid=$(pid_in "$pidfile" "$comm") || continue
  if [ "${SANDBOX_RESET:-0}" = 1 ]; then die "SANDBOX_RESET=1 needs the daemons stopped: run slurm-down.sh first"; fi
  ((changed)) || continue
  [ "$(pid_in "$RUN/$name.pid" "$comm")" = "$pid" ] || die "the config changed, but $name (pid $pid) was not started by this script: stop it first"
  log "config changed: stopping $name (pid $pid) to restart it"
  stop_pid "$name" "$pid" || die "could not stop $name (pid $pid)"
  rm -f "$RUN/$name.pid"
done
if [ "${SANDBOX_RESET:-0}" = 1 ]; then rm -rf /var/spool/slurmctld/* /var/spool/slurmd/*; log "old job state wiped"; fi

# ---- 3. daemons
# launch NAME COMM PIDFILE LOGFILE READY -- CMD...: unless NAME already runs, run CMD, then poll
# every 0.1 s until PIDFILE names a live COMM and READY (a shell snippet) succeeds. Fails fast if
# the daemon dies, and records its PID in $RUN for slurm-down.sh.
launch() {
  local name=$1 comm=$2 pidfile=$3 logfile=$4 ready=$5 pid start
  shift 6
  if pid=$(pid_in "$pidfile" "$comm"); then log "$name already running (pid $pid)"; return 0; fi
  start=$SECONDS LAUNCHED=""
  # The daemon's own console output goes next to its log; the log itself the daemon owns.
  "$@" </dev/null >>"$LOGDIR/$name.out" 2>&1 || { show_log "$LOGDIR/$name.out"; die "$name failed to start (log: $logfile)"; }
  until pid=$(pid_in "$pidfile" "$comm") && bash -c "$ready" >/dev/null 2>&1; do
    if [ -z "$pid" ] && ! alive "$LAUNCHED" && (( SECONDS - start > 3 )); then
      show_log "$LOGDIR/$name.out"; show_log "$logfile"; die "$name exited during start-up (log: $logfile)"
    fi
    (( SECONDS - start < 60 )) || { show_log "$logfile"; die "$name not ready after 60 s (log: $logfile)"; }
    sleep 0.1
  done
  echo "$pid" > "$RUN/$name.pid"
  log "$name started (pid $pid)"
}
background() { setsid "$@" & LAUNCHED=$!; }   # for daemons that do not detach by themselves

[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key \
  || die "could not create /etc/munge/munge.key"
chown munge:munge /etc/munge/munge.key && chmod 0600 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
launch munged munged /run/munge/munged.pid /var/log/munge/munged.log 'munge -n | unmunge' \
  -- runuser -u munge -- /usr/sbin/munged

install -d -o mysql -g root -m 0755 /run/mysqld
[ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >>$LOGDIR/mariadb.out 2>&1 \
  || die "mariadb-install-db failed (log: $LOGDIR/mariadb.out)"
launch mariadb mariadbd /run/mysqld/mysqld.pid $LOGDIR/mariadb.out 'timeout 5 mariadb-admin ping' \
  -- background /usr/sbin/mariadbd --user=mysql --skip-networking --innodb-buffer-pool-size=64M
timeout 10 mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
  ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "could not create Slurm's database in MariaDB"

launch slurmdbd slurmdbd /run/slurmdbd.pid $LOGDIR/slurmdbd.log 'timeout 2 bash -c "</dev/tcp/127.0.0.1/6819"' \
  -- /usr/sbin/slurmdbd
launch slurmctld slurmctld /run/slurmctld.pid $LOGDIR/slurmctld.log 'timeout 5 scontrol ping | grep -q UP' \
  -- /usr/sbin/slurmctld
launch slurmd slurmd /run/slurmd.pid $LOGDIR/slurmd.log 'true' -- /usr/sbin/slurmd

# ---- 4. wait for the node. A drain reason from an earlier failed start survives in the saved
# state, so a drained node is resumed once.
resumed=0 deadline=$(( SECONDS + 60 ))
while :; do
  state=$(timeout 5 sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1) || true
  case $state in
    idle|mixed|allocated|completing) break ;;
    drain*|inval*)
      if (( !resumed )); then
        log "node $NODE is $state: resuming it"
        timeout 5 scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
        resumed=1 resumed_at=$SECONDS
      elif (( SECONDS - resumed_at > 10 )); then
        show_log $LOGDIR/slurmctld.log
        die "node $NODE is $state: $(timeout 5 sinfo -h -N -n "$NODE" -o %E 2>/dev/null)"
      fi ;;
  esac
  pid_in /run/slurmd.pid slurmd >/dev/null || { show_log $LOGDIR/slurmd.log; die "slurmd died (log: $LOGDIR/slurmd.log)"; }
  (( SECONDS < deadline )) || { show_log $LOGDIR/slurmd.log; die "node $NODE is '$state', not idle, after 60 s"; }
  sleep 0.1
done
log "node $NODE is $state"

# ---- 5. seff, started in the background above
[ -z "$seff_job" ] || wait "$seff_job" || log "WARNING: seff is not installed; sacct still works"

# ---- 6. smoke test: a one-task job on an idle node. On a node busy with other jobs it could wait
# for minutes, and those jobs already show that scheduling works.
busy() { [[ $(timeout 5 sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1) =~ ^(mixed|allocated|completing)$ ]]; }
if busy; then
  log "node $NODE is running jobs: no smoke test needed"
elif ! timeout 30 srun -n1 --mem=64M -t 1 true >/dev/null 2>&1 && ! busy; then
  show_log $LOGDIR/slurmd.log; die "the smoke test 'srun true' failed"
fi
log "ready: partition debug, $GPUS fake GPUs; logs in $LOGDIR; stop with jobs/sandbox/slurm-down.sh"
