# shellcheck shell=bash
# Sourced by every job template, right after its #SBATCH lines and `set -euo pipefail`:
#
#     source "${DLKIT_ROOT:-${SLURM_SUBMIT_DIR:-.}}/jobs/lib/job.sh"
#
# It does the four things every job needs, so no template repeats them:
#   1. finds the kit (DLKIT_ROOT) and reads the site file (jobs/site.env, or $DLKIT_SITE_ENV);
#   2. activates the software environment the site file names (modules, conda, venv);
#   3. exports the data and output locations (MNIST_DATA, DLKIT_RUNS_DIR);
#   4. prints the job's context: host, CPUs allowed, GPUs, and the sorted SLURM_* variables.
# It also defines dlkit_rendezvous, which DDP templates call for MASTER_ADDR and MASTER_PORT (and
# which checks that MASTER_ADDR resolves, so a typo fails at once instead of hanging), and
# dlkit_workers, the DataLoader workers that fit in a number of CPUs.

# Slurm runs a *copy* of the batch script, so the script cannot find the kit from its own path.
# This file can: it is sourced by path.
DLKIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export DLKIT_ROOT

dlkit_die() {
    echo "dlkit: error: $*" >&2
    exit 2
}

dlkit_abspath() {  # a path relative to the kit's root, made absolute
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s\n' "$DLKIT_ROOT/$1" ;;
    esac
}

dlkit_load_site() {
    # The site file is plain bash. Only DLKIT_* settings are exported to the job's programs;
    # its SBATCH_* lines matter to sbatch at submit time, not here.
    DLKIT_SITE_ENV="${DLKIT_SITE_ENV:-$DLKIT_ROOT/jobs/site.env}"
    [[ -f "$DLKIT_SITE_ENV" ]] || dlkit_die "site file $DLKIT_SITE_ENV not found (copy jobs/site.env.example)"
    # shellcheck source=/dev/null
    source "$DLKIT_SITE_ENV"
    export DLKIT_SITE_ENV
}

dlkit_activate() {
    # Module and conda scripts read unset variables and return non-zero on harmless paths, so
    # strict mode is relaxed around them and restored after: the equivalent of `set -euo pipefail`
    # that does not break activation.
    local saved_opts
    saved_opts="$(set +o)"
    set +eu
    if [[ -n "${DLKIT_MODULES:-}" ]]; then
        if ! type module >/dev/null 2>&1; then
            for init in /etc/profile.d/lmod.sh /etc/profile.d/modules.sh /usr/share/lmod/lmod/init/bash; do
                # shellcheck source=/dev/null
                [[ -f "$init" ]] && source "$init" && break
            done
        fi
        type module >/dev/null 2>&1 || { eval "$saved_opts"; dlkit_die "DLKIT_MODULES is set but there is no 'module' command"; }
        # shellcheck disable=SC2086  # a space-separated list of modules
        module load $DLKIT_MODULES || { eval "$saved_opts"; dlkit_die "module load $DLKIT_MODULES failed"; }
    fi
    if [[ -n "${DLKIT_CONDA_ENV:-}" ]]; then
        command -v conda >/dev/null 2>&1 || { eval "$saved_opts"; dlkit_die "DLKIT_CONDA_ENV is set but there is no 'conda' command"; }
        eval "$(conda shell.bash hook)"
        conda activate "$DLKIT_CONDA_ENV" || { eval "$saved_opts"; dlkit_die "conda activate $DLKIT_CONDA_ENV failed"; }
    fi
    if [[ -n "${DLKIT_VENV:-}" ]]; then
        local venv
        venv="$(dlkit_abspath "$DLKIT_VENV")"
        [[ -f "$venv/bin/activate" ]] || { eval "$saved_opts"; dlkit_die "no virtualenv at $venv (DLKIT_VENV)"; }
        # shellcheck source=/dev/null
        source "$venv/bin/activate"
    fi
    eval "$saved_opts"
    # The kit runs from its checkout even when it is not pip-installed.
    export PYTHONPATH="$DLKIT_ROOT${PYTHONPATH:+:$PYTHONPATH}"
}

dlkit_locations() {
    # Data is read from one place on the cluster (relative paths are under the kit);
    # results go under the directory the job was submitted from, next to its %x-%j.out log.
    if [[ -n "${DLKIT_DATA_DIR:-}" ]]; then
        MNIST_DATA="$(dlkit_abspath "$DLKIT_DATA_DIR")"
        export MNIST_DATA
    fi
    DLKIT_RUNS_DIR="${DLKIT_RUNS_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/runs}"
    export DLKIT_RUNS_DIR
}

dlkit_runs_dir() {  # dlkit_runs_dir NAME: create and print $DLKIT_RUNS_DIR/NAME
    mkdir -p "$DLKIT_RUNS_DIR/$1"
    printf '%s\n' "$DLKIT_RUNS_DIR/$1"
}

dlkit_context() {
    echo "=== job context ($(date -u '+%Y-%m-%d %H:%M:%S UTC')) ==="
    echo "host:          $(hostname)"
    echo "kit:           $DLKIT_ROOT (site file $DLKIT_SITE_ENV)"
    echo "python:        $(command -v python || echo 'not found') ($(python -V 2>&1 || true))"
    echo "cpus allowed:  $(nproc) (cpu list: $(grep -s Cpus_allowed_list /proc/self/status | cut -f2 || echo '?'))"
    echo "gpus visible:  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-<unset>}"
    if command -v nvidia-smi >/dev/null 2>&1; then
        timeout 20 nvidia-smi -L 2>&1 | sed 's/^/               /' || true
    fi
    echo "data:          ${MNIST_DATA:-<default>}   runs: $DLKIT_RUNS_DIR"
    echo "slurm:"
    env | grep '^SLURM_' | LC_ALL=C sort | sed 's/^/  /' || echo "  (not inside a Slurm job)"
    echo "==="
}

dlkit_pin_flag() {
    # --no-pin-memory where no GPU answers (the sandbox's GPUs are fake): the script then trains on
    # the CPU and pins no memory, so the main process needs one core, not two. Both helpers below
    # ask this, so "workers for C CPUs" and "CPUs for W workers" stay each other's inverse.
    timeout 20 nvidia-smi -L >/dev/null 2>&1 || echo --no-pin-memory
}

dlkit_workers() {
    # DataLoader workers for $1 CPUs beside one training process with ${2:-1} GPU(s): the kit's one
    # CPU rule (profiling/cpu_rule.py), which the advice, the checker and the launcher use too.
    # shellcheck disable=SC2046  # the flag is one word or none
    python "$DLKIT_ROOT/profiling/cpu_rule.py" workers "$1" --gpus "${2:-1}" $(dlkit_pin_flag)
}

dlkit_cpus_for_workers() {
    # CPUs for $1 DataLoader workers beside one training process with a GPU: the same one CPU rule.
    # shellcheck disable=SC2046
    python "$DLKIT_ROOT/profiling/cpu_rule.py" cpus "$1" --gpus 1 $(dlkit_pin_flag)
}

dlkit_rendezvous() {
    # MASTER_ADDR: the first host of the allocation. Every node runs this same derivation, so
    # all of them agree without talking to each other. (mapfile, not `| head -n1`: under
    # pipefail a head that closes the pipe early can kill scontrol and with it the script.)
    local hosts base
    mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
    [[ ${#hosts[@]} -gt 0 ]] || dlkit_die "scontrol show hostnames '$SLURM_JOB_NODELIST' printed nothing"
    # DLKIT_MASTER_ADDR in the job's environment overrides it, for a site whose fast network has
    # its own host names (gpu101-ib); sbatch passes your environment on to the job.
    MASTER_ADDR="${DLKIT_MASTER_ADDR:-${hosts[0]}}"
    # MASTER_PORT: from the job id, so two jobs on one node do not collide, plus the array task id,
    # so the tasks of one array do not either. 10000-29999 stays below Linux's ephemeral ports
    # (32768+), which outgoing connections may already hold.
    base="${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}"
    MASTER_PORT=$(( 10000 + (base + ${SLURM_ARRAY_TASK_ID:-0}) % 20000 ))
    export MASTER_ADDR MASTER_PORT
    echo "rendezvous:    MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT (${#hosts[@]} node(s))"
    # A name that does not resolve does not fail fast in torchrun: it retries two 60 s connect
    # time-outs and more (2 min 40 s measured) before the job fails. Check it before launching.
    getent hosts "$MASTER_ADDR" >/dev/null \
        || dlkit_die "rendezvous: MASTER_ADDR=$MASTER_ADDR does not resolve on $(hostname) (getent hosts); the job's nodes are ${hosts[*]}"
}

dlkit_load_site
dlkit_activate
dlkit_locations
dlkit_context
