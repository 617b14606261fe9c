# shellcheck shell=bash disable=SC2034  # the variables are used by the scripts that source this
# Sourced by two-node-up.sh and two-node-down.sh (after common.sh): where the two-node cluster
# keeps everything. Nothing here is shared with the one-node sandbox except munged and slurmdbd.
TWO_CLUSTER=twonode
TWO_ROOT=/var/lib/slurm-two-node          # etc/ (slurm.conf, gres.conf, hosts), state/, spool/, log/, fake-gpu/
TWO_CONF=$TWO_ROOT/etc/slurm.conf         # clients: export SLURM_CONF=$TWO_CONF
TWO_RUN=/run/slurm-two-node               # the daemons' pid files
TWO_LOG_OUT=$TWO_ROOT/log/daemons.out     # the daemons' console output
TWO_CTLD_PORT=6837                        # the one-node sandbox uses 6817-6819
declare -A TWO_NODE_PORT=([n1]=6838 [n2]=6839)

# two_node_pids: the PIDs of this cluster's live daemons, slurmd first.
two_node_pids() {
  local node
  for node in n1 n2; do pid_in "$TWO_RUN/slurmd-$node.pid" slurmd || true; done
  pid_in "$TWO_RUN/slurmctld.pid" slurmctld || true
}

# two_node_cgroups: the cgroup v1 folders of the two nodes (slurm_<node>, from --enable-multiple-slurmd).
two_node_cgroups() {
  find /sys/fs/cgroup -maxdepth 2 -type d \( -name slurm_n1 -o -name slurm_n2 \) 2>/dev/null || true
}
