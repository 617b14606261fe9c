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
