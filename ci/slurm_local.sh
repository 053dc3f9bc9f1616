#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the `slurm` tests and for trying a matrix under srun
# or sbatch without a cluster: munged, slurmctld and slurmd from Debian's slurm-wlm and munge, every file
# (key, socket, configuration, state, spool, pid and log files) under one directory.
#
#   ci/slurm_local.sh start   start the three daemons (idempotent: a running cluster is left as it is), wait
#                             until the node is idle, print `export SLURM_CONF=...` on stdout
#   ci/slurm_local.sh stop    stop them by the pids this script recorded (idempotent), keep the directory
#   ci/slurm_local.sh status  exit 0 when the cluster answers and its node is up
#   ci/slurm_local.sh env     print `export SLURM_CONF=...` (what a shell needs to use the cluster)
#
#   DTNN_SLURM_DIR   the directory (default /tmp/dtnn-slurm-$UID)
#   DTNN_SLURM_PORT  slurmctld's port; slurmd's is the next one (default: the first free pair from
#                    DTNN_SLURM_PORT_BASE, itself 16817 by default)
#
# The node is this host as `slurmd -C` describes it (so Slurm's CPU count is the machine's), in one default
# partition `debug`. proctrack/linuxproc and task/none: no cgroups, so it starts in a container. The daemons
# run as the calling user (root in CI; an ordinary user works too, since every file is that user's).
# Exit 0 on success; on failure one line on stderr, the daemons' log tails, and exit 1.
set -euo pipefail

dir="${DTNN_SLURM_DIR:-/tmp/dtnn-slurm-$(id -u)}"
conf="$dir/slurm.conf"
die() {
  echo "ci/slurm_local.sh: $*" >&2
  for log in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [ -s "$log" ] && { echo "--- tail of $log" >&2; tail -n 15 "$log" >&2; }
  done
  exit 1
}

alive() {  # alive NAME: the daemon's recorded pid runs that program
  local pidfile="$dir/$1.pid" pid
  [ -s "$pidfile" ] || return 1
  pid="$(cat "$pidfile")"
  [ -d "/proc/$pid" ] && grep -q "$1" "/proc/$pid/comm" 2>/dev/null
}

node_state() { SLURM_CONF="$conf" sinfo -h -N -o '%T' 2>/dev/null | head -n 1; }

free_port_pair() {  # the first port p >= $1 with p and p+1 free for TCP on this host
  local p="$1"
  while ((p < 65000)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
      echo "$p"
      return
    fi
    p=$((p + 2))
  done
  return 1
}

write_conf() {
  local node ctld_port user
  node="$(hostname -s)"
  user="$(id -un)"
  ctld_port="${DTNN_SLURM_PORT:-$(free_port_pair "${DTNN_SLURM_PORT_BASE:-16817}")}" || die "no free TCP port pair from 16817"
  # slurmd -C prints this machine's NodeName line (CPUs, sockets, cores, threads, memory); the node gets
  # exactly what the hardware has, so Slurm's task counts match what mpirun sees.
  local hw
  hw="$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //')"
  cat > "$conf" <<EOF
# Written by ci/slurm_local.sh: a one-node cluster for tests; everything lives in $dir.
ClusterName=dtnn-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
# The PMIx plugin's per-step directories (spmix_appdir_<uid>_<job>.<step>) go under TmpFS. Two clusters of
# this script (ctest runs the Slurm tests side by side) both number their jobs from 1: under a shared /tmp
# their steps would share those directories.
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
EnforcePartLimits=ALL
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MessageTimeout=10
KillWait=5
InactiveLimit=0
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
}

start() {
  command -v slurmctld > /dev/null && command -v munged > /dev/null ||
    die "slurmctld or munged is not installed (apt-get install slurm-wlm munge; ci/setup.sh installs them)"
  mkdir -p "$dir/state" "$dir/spool" "$dir/tmp"
  chmod 700 "$dir"
  if alive munged && alive slurmctld && alive slurmd; then
    echo "export SLURM_CONF=$conf"
    return
  fi
  stop quietly
  [ -s "$dir/munge.key" ] || { dd if=/dev/urandom bs=1 count=1024 of="$dir/munge.key" status=none && chmod 600 "$dir/munge.key"; }
  # --force: munged refuses a socket directory it did not make, or one under /tmp, without it.
  munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>> "$dir/munged.log" || die "munged did not start"
  write_conf
  export SLURM_CONF="$conf"
  slurmctld -i -f "$conf" 2>> "$dir/slurmctld.log" || die "slurmctld did not start"
  slurmd -f "$conf" -N "$(hostname -s)" 2>> "$dir/slurmd.log" || die "slurmd did not start"
  local state="" i
  for i in $(seq 1 150); do  # the node registers within a second or two; 30 s at most
    state="$(node_state)"
    case "$state" in idle* | mixed* | allocated*) break ;; esac
    sleep 0.2
  done
  case "$state" in
    idle* | mixed* | allocated*) ;;
    *) die "the node did not come up within 30 s (state '${state:-no answer}')" ;;
  esac
  echo "export SLURM_CONF=$conf"
}

stop() {
  local name pid
  for name in slurmd slurmctld munged; do
    if alive "$name"; then
      pid="$(cat "$dir/$name.pid")"
      kill "$pid" 2> /dev/null || true
      for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
      [ -d "/proc/$pid" ] && kill -9 "$pid" 2> /dev/null || true
    fi
    rm -f "$dir/$name.pid"
  done
  [ "${1:-}" = quietly ] || echo "ci/slurm_local.sh: stopped (files kept in $dir)" >&2
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) alive munged && alive slurmctld && alive slurmd && case "$(node_state)" in idle* | mixed* | allocated*) true ;; *) false ;; esac ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) echo "usage: ci/slurm_local.sh start|stop|status|env" >&2; exit 2 ;;
esac
