#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for tests and CI: munge, slurmctld
# and three emulated slurmd nodes (node1-node3 on 127.0.0.1), state under DIR
# (munge's key, made if missing, and its run, log and state directories stay
# where Debian's munge keeps them: /etc/munge, /run, /var/log, /var/lib).
#
#   scripts/slurm-local.sh up DIR     # prints: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-local.sh down DIR   # stops exactly the daemons 'up' started (by PID)
#
# Needs root and Debian's slurm-wlm and munge (scripts/install-deps.sh installs them).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z $cmd || -z $dir ]]; then
  echo "usage: $0 up|down DIR" >&2
  exit 2
fi
nodes=3

stop_all() {
  [[ -f $dir/pids ]] || return 0
  while read -r pid name; do
    kill "$pid" 2>/dev/null || true
  done <"$dir/pids"
  # Dead daemons can linger as zombies for seconds: wait on the state, not kill -0.
  for _ in $(seq 50); do
    local alive=0
    while read -r pid name; do
      state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo X)
      [[ $state == X || $state == Z ]] || alive=1
    done <"$dir/pids"
    ((alive)) || break
    sleep 0.1
  done
  while read -r pid name; do kill -9 "$pid" 2>/dev/null || true; done <"$dir/pids"
  rm -f "$dir/pids"
}

if [[ $cmd == down ]]; then
  stop_all
  exit 0
fi
[[ $cmd == up ]] || { echo "$0: unknown command '$cmd' (up or down)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "$0: needs root (slurmd runs jobs as their users)" >&2; exit 1; }
for tool in munged slurmctld slurmd sinfo; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not found: apt-get install slurm-wlm munge" >&2; exit 1; }
done

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stop_all
mkdir -p "$dir/state" "$dir/spool" /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if [[ ! -s /etc/munge/munge.key ]]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
: >"$dir/pids"

host=$(hostname -s)
cat >"$dir/slurm.conf" <<CONF
# Written by scripts/slurm-local.sh: a one-machine cluster for tests.
ClusterName=xtk-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SchedulerParameters=batch_sched_delay=0
EnforcePartLimits=ALL
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
NodeName=node[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=[17001-1700$nodes] CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=xtk Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf

# munged: only if none answers already (a machine may run its own).
if ! munge -n </dev/null >/dev/null 2>&1; then
  runuser -u munge -- munged --force
  sleep 0.2
  pgrep -n -u munge munged | sed 's/$/ munged/' >>"$dir/pids"
fi
slurmctld -f "$SLURM_CONF"
for _ in $(seq 50); do [[ -s $dir/slurmctld.pid ]] && break; sleep 0.1; done
echo "$(cat "$dir/slurmctld.pid") slurmctld" >>"$dir/pids"
for n in $(seq "$nodes"); do
  slurmd -f "$SLURM_CONF" -N "node$n"
  for _ in $(seq 50); do [[ -s $dir/slurmd-node$n.pid ]] && break; sleep 0.1; done
  echo "$(cat "$dir/slurmd-node$n.pid") slurmd-node$n" >>"$dir/pids"
done
for _ in $(seq 100); do
  idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)
  ((idle == nodes)) && break
  sleep 0.2
done
if ((idle != nodes)); then
  sinfo -N >&2 || true
  tail -n 20 "$dir/slurmctld.log" >&2 || true
  echo "$0: only $idle of $nodes nodes came up idle" >&2
  exit 1
fi
echo "export SLURM_CONF=$SLURM_CONF"
