# shellcheck shell=bash disable=SC2034  # the variables are used by the scripts that source this
# Sourced by slurm-up.sh, slurm-down.sh and install-seff.sh: paths and small helpers.
# Set PROG before sourcing; every fatal message is one line "PROG: ERROR: ...".

SANDBOX_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ETC=/etc/slurm
RUN=/run/slurm-sandbox            # pid files of the daemons *we* started; slurm-down.sh reads them
LOGDIR=/var/log/slurm
FAKE_GPU_DIR=/var/lib/slurm/fake-gpu
MARKER="# written by the kit's jobs/sandbox/slurm-up.sh"
T0=$(date +%s%N)

log() { printf '%s [%5.1fs] %s\n' "$PROG" "$(( ($(date +%s%N) - T0) / 1000000 ))e-3" "$*"; }
die() { echo "$PROG: ERROR: $*" >&2; exit 1; }
# Print the end of a daemon log to stderr, so that the ERROR line that follows has its context.
show_log() { [ -s "$1" ] && { echo "--- last lines of $1" >&2; tail -n 12 "$1" >&2; }; return 0; }

# A PID is alive when /proc has it and it is not a zombie: PID 1 on some machines reaps late,
# and kill -0 succeeds on zombies.
alive() { [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# pid_in FILE COMM: print the PID in FILE if that process is alive and really is COMM.
pid_in() {
  local p
  [ -s "$1" ] || return 1
  p=$(tr -dc 0-9 < "$1")
  alive "$p" && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p"
}

# The daemons in start order: our name, the process name (comm), the pid file the daemon writes.
DAEMONS=(
  "munged munged /run/munge/munged.pid"
  "mariadb mariadbd /run/mysqld/mysqld.pid"
  "slurmdbd slurmdbd /run/slurmdbd.pid"
  "slurmctld slurmctld /run/slurmctld.pid"
  "slurmd slurmd /run/slurmd.pid"
)

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts system daemons)"

# stop_pid NAME PID: SIGTERM, wait up to 30 s (MariaDB flushes to disk), then SIGKILL.
stop_pid() {
  local name=$1 pid=$2
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 300); do alive "$pid" || return 0; sleep 0.1; done
  log "WARNING: $name (pid $pid) ignored SIGTERM for 30 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
  ! alive "$pid"
}

# cancel_all_jobs: cancel every job of the cluster SLURM_CONF names (the default one if unset) and
# wait up to 20 s for the queue to empty, so that no job processes outlive slurmd.
cancel_all_jobs() {
  local jobs
  read -ra jobs <<<"$(timeout 5 squeue -h -o %A 2>/dev/null | sort -u | xargs)"
  [ ${#jobs[@]} -gt 0 ] || return 0
  log "cancelling jobs ${jobs[*]}"
  timeout 10 scancel "${jobs[@]}" 2>/dev/null
  for _ in $(seq 100); do [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.2; done
}

# read_hardware: CPUS BOARDS SOCKETS CORES THREADS MEMORY (MB) of this machine as Slurm sees it,
# from the first line of `slurmd -C`: NodeName=vm CPUs=2 ... RealMemory=24105
read_hardware() {
  local hw
  hw=$(slurmd -C 2>/dev/null | sed -n 1p)  # sed reads to the end: no SIGPIPE under pipefail
  _field() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$hw"; }
  CPUS=$(_field CPUs) BOARDS=$(_field Boards) SOCKETS=$(_field SocketsPerBoard)
  CORES=$(_field CoresPerSocket) THREADS=$(_field ThreadsPerCore) MEMORY=$(_field RealMemory)
  if [ -z "$CPUS" ] || [ -z "$MEMORY" ]; then die "could not read CPUs and RealMemory from 'slurmd -C': $hw"; fi
}

# choose_cgroup: turn CGROUP=auto|v1|none into v1 or none, and set PROCTRACK, TASKPLUGIN and
# OVERMEMORY for slurm.conf. Slurm 22.05's cgroup support here is v1 only; hosts that mount just
# cgroup v2 get /proc tracking.
cgroup_v1_mounted() {
  local c
  for c in cpuset memory devices freezer; do [ -e /sys/fs/cgroup/$c/tasks ] || return 1; done
}
choose_cgroup() {
  if [ "$CGROUP" = auto ]; then
    if cgroup_v1_mounted; then CGROUP=v1; else CGROUP=none; fi
  elif [ "$CGROUP" = v1 ]; then
    cgroup_v1_mounted || die "SANDBOX_CGROUP=v1, but the cgroup v1 controllers are not mounted under /sys/fs/cgroup"
  fi
  if [ "$CGROUP" = v1 ]; then
    PROCTRACK=proctrack/cgroup TASKPLUGIN=task/cgroup,task/affinity
    OVERMEMORY="# --mem is enforced by the cgroup memory controller (cgroup.conf)."
  else
    PROCTRACK=proctrack/linuxproc TASKPLUGIN=task/affinity
    OVERMEMORY=$'# No cgroups: --mem is enforced only by the sampler killing steps that go over it.\nJobAcctGatherParams=OverMemoryKill'
  fi
}

# render_keys TEMPLATE KEY...: print TEMPLATE with every @KEY@ replaced by the value of $KEY.
render_keys() {
  local text key
  text=$(<"$1")
  shift
  for key in "$@"; do text=${text//@$key@/${!key}}; done
  printf '%s\n' "$text"
}
