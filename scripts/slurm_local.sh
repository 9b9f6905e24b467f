#!/usr/bin/env bash
# A one-node SLURM on this machine, from Debian's packages, for tests and trials.
#
#   scripts/slurm_local.sh start STATE_DIR
#       install slurmctld, slurmd, slurm-client and munge if missing (apt-get), write
#       STATE_DIR/slurm.conf, start munged (unless one already answers), slurmctld and
#       slurmd, and wait until the node is idle
#   scripts/slurm_local.sh stop STATE_DIR
#       cancel every job of this cluster, then stop the daemons that start started,
#       by their PID files
#
# Then point SLURM's commands (and Snakemake) at it: export SLURM_CONF=STATE_DIR/slurm.conf
# Settings from the environment: SLURM_LOCAL_WAIT_S (seconds to wait for each daemon,
# default 30), SLURM_LOCAL_PORTS ("CTLD_PORT SLURMD_PORT", default two free ports).
# Everything of this cluster (configuration, state, spool, logs, PID files, and the
# JobComp file STATE_DIR/jobcomp.log with one line per finished job) lives in
# STATE_DIR; only munged uses its system paths (/etc/munge, /run/munge).
#
# Needs root and no systemd: it installs packages, runs munged as the munge account,
# and slurmctld and slurmd as root. Every step is bounded; a failed start stops what
# it started and prints the daemons' own words. The daemons get no standard streams
# of the caller (they would hold a caller's pipe open for ever).
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge)
WAIT_S=${SLURM_LOCAL_WAIT_S:-30}

say() { echo "slurm_local: $*" >&2; }
die() {
  say "error: $*"
  exit 1
}
usage() {
  echo "usage: $0 start|stop STATE_DIR" >&2
  exit 2
}

[ $# -eq 2 ] || usage
action=$1
state=$(realpath -m -- "$2")
conf=$state/slurm.conf
SYSTEM_CONF=/etc/slurm/slurm.conf
run=$state/run
logs=$state/log
export SLURM_CONF=$conf

# The PID in file $1 if that process is alive and its command name is $2.
pid_of() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(tr -dc '0-9' <"$1")
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
  echo "$pid"
}

# Poll command "$@" every half second until it succeeds or $timeout seconds pass.
wait_until() {
  local timeout=$1
  shift
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}

# SIGTERM the process in PID file $1 (command name $2), SIGKILL it after 10 s.
stop_pid() {
  local pid
  pid=$(pid_of "$1" "$2") || {
    rm -f "$1"
    return 0
  }
  say "stopping $2 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_until 10 sh -c "! kill -0 $pid 2>/dev/null"; then
    say "$2 (pid $pid) ignored SIGTERM for 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 5 sh -c "! kill -0 $pid 2>/dev/null" || say "warning: $2 (pid $pid) is still there"
  fi
  rm -f "$1"
}

tail_log() {
  [ -s "$1" ] && { echo "--- last lines of $1:"; tail -n "${2:-15}" "$1"; } >&2 || true
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

install_packages() {
  local missing=() p rc=0 policy=/usr/sbin/policy-rc.d added_policy=0 log=$logs/apt.log
  for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "${missing[*]} missing, and no apt-get to install them (this script expects Debian)"
  say "installing ${missing[*]} with apt-get --no-install-recommends (log: $log)"
  # Keep the packages' install scripts from starting the daemons with the system's
  # configuration: we start them by hand with ours.
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' >$policy
    chmod 755 $policy
    added_policy=1
  fi
  apt_install() {
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1
  }
  if ! apt_install; then
    say "apt-get install failed; updating the package lists and trying again"
    { timeout 300 apt-get update -q >>"$log" 2>&1 && apt_install; } || rc=$?
  fi
  [ $added_policy -eq 0 ] || rm -f $policy
  [ $rc -eq 0 ] || {
    tail_log "$log"
    die "could not install ${missing[*]} (apt-get exit $rc)"
  }
}

munge_works() { timeout 5 sh -c 'munge -n | unmunge' >/dev/null 2>&1; }

start_munged() {
  if munge_works; then
    say "munged already answers; using it (stop leaves it running)"
    return 0
  fi
  getent passwd munge >/dev/null || die "no munge account (is the munge package installed?)"
  if [ ! -s /etc/munge/munge.key ]; then
    say "creating /etc/munge/munge.key"
    (umask 077 && dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none)
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
  fi
  # Without systemd nothing creates munged's socket directory.
  [ -d /run/munge ] || install -d -o munge -g munge -m 0755 /run/munge
  [ -d /var/lib/munge ] || install -d -o munge -g munge -m 0700 /var/lib/munge
  [ -d /var/log/munge ] || install -d -o munge -g munge -m 0700 /var/log/munge
  say "starting munged as munge"
  timeout 10 runuser -u munge -- /usr/sbin/munged </dev/null >>"$logs/munged.out" 2>&1 || {
    tail_log "$logs/munged.out"
    tail_log /var/log/munge/munged.log
    die "munged did not start"
  }
  wait_until 10 munge_works || {
    tail_log /var/log/munge/munged.log
    die "munged started but 'munge -n | unmunge' still fails after 10 s"
  }
  local pid="" p
  if [ -s /run/munge/munged.pid ]; then
    pid=$(tr -dc '0-9' </run/munge/munged.pid)
  else
    for p in /proc/[0-9]*; do
      [ "$(cat "$p/comm" 2>/dev/null)" = munged ] && pid=${p#/proc/} && break
    done
  fi
  [ -n "$pid" ] || die "munged answers but its PID is unknown, so stop could not end it"
  echo "$pid" >"$run/munged.pid"
  touch "$run/munged.ours"
}

free_ports() {
  python3 -c 'import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))'
}

write_conf() {
  local node_line node mem ports
  node_line=$(timeout 20 slurmd -C 2>/dev/null | grep -m1 '^NodeName=') || die "slurmd -C printed no NodeName line"
  node=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$node_line")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")
  [ -n "$node" ] && [ -n "$mem" ] || die "cannot read the node name and memory from: $node_line"
  # slurmstepd listens on STATE_DIR/spool/<node>_<job>.<step>, and a socket path has
  # at most 107 characters.
  [ $((${#state} + ${#node} + 30)) -le 107 ] || die "STATE_DIR $state is too long for slurmstepd's socket paths; use a shorter one"
  # slurmd drains a node whose memory is below what the configuration claims;
  # claiming 90 % leaves room for what the kernel reports differently later.
  node_line=$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 9 / 10))/" <<<"$node_line")
  ports=${SLURM_LOCAL_PORTS:-$(free_ports)}
  read -r ctld_port slurmd_port <<<"$ports"
  cat >"$conf" <<EOF
# A one-node test cluster, written by scripts/slurm_local.sh; not for production.
ClusterName=nodebench
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups needed: processes tracked through their parents, CPUs bound by affinity.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
ReturnToService=2
KillWait=5
# No accounting database (so no sacct); a durable line per finished job instead.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$state/jobcomp.log
# MinJobAge stays at its default (300 s): squeue must list a finished job long
# enough for snakemake-executor-plugin-slurm to see it finish.
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  echo "$node"
}

node_state() { timeout 5 sinfo -h -N -n "$1" -o '%T' 2>/dev/null | head -n1; }
node_idle() { [ "$(node_state "$1")" = idle ]; }
ctld_up() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (packages, munged as munge, slurmd)"
  if pid_of "$run/slurmctld.pid" slurmctld >/dev/null || pid_of "$run/slurmd.pid" slurmd >/dev/null; then
    die "a cluster from $state is already running; stop it first"
  fi
  mkdir -p "$state" "$run" "$logs" "$state/ctld" "$state/spool"
  trap 'rc=$?; if [ $rc -ne 0 ]; then say "start failed; stopping what it started"; stop_all || true; fi' EXIT
  install_packages
  start_munged
  local node
  node=$(write_conf)
  # Job steps (srun inside a batch job) look for the configuration at SLURM's compiled-in
  # path, not at SLURM_CONF, when the daemons are not configless; point that path at ours
  # if nothing is there, and take it away again on stop. A link whose target is gone is
  # what a killed earlier start left behind (its stop never ran): replace it.
  if [ -L "$SYSTEM_CONF" ] && [ ! -e "$SYSTEM_CONF" ]; then
    say "replacing $SYSTEM_CONF, a link to $(readlink "$SYSTEM_CONF"), which is gone"
    rm -f "$SYSTEM_CONF"
  fi
  if [ ! -e "$SYSTEM_CONF" ] && [ ! -L "$SYSTEM_CONF" ]; then
    mkdir -p "$(dirname "$SYSTEM_CONF")"
    ln -s "$conf" "$SYSTEM_CONF"
    echo "$SYSTEM_CONF" >"$run/system-conf.ours"
  elif [ "$(readlink -f "$SYSTEM_CONF")" != "$(readlink -f "$conf")" ]; then
    die "$SYSTEM_CONF is another cluster's configuration, and job steps (srun inside a batch job) would read it instead of $conf; move it aside to use this one-node cluster"
  fi
  say "starting slurmctld (log $logs/slurmctld.log)"
  timeout 30 slurmctld -f "$conf" </dev/null >>"$logs/slurmctld.out" 2>&1 || {
    tail_log "$logs/slurmctld.out"
    tail_log "$logs/slurmctld.log"
    die "slurmctld did not start"
  }
  wait_until "$WAIT_S" ctld_up || {
    tail_log "$logs/slurmctld.log"
    die "slurmctld does not answer 'scontrol ping' after $WAIT_S s"
  }
  say "starting slurmd (log $logs/slurmd.log)"
  timeout 30 slurmd -f "$conf" </dev/null >>"$logs/slurmd.out" 2>&1 || {
    tail_log "$logs/slurmd.out"
    tail_log "$logs/slurmd.log"
    die "slurmd did not start"
  }
  if ! wait_until "$WAIT_S" node_idle "$node"; then
    say "node $node is '$(node_state "$node")' after $WAIT_S s; SLURM says why:"
    timeout 5 sinfo -R >&2 || true
    tail_log "$logs/slurmd.log"
    tail_log "$logs/slurmctld.log"
    die "node $node did not become idle"
  fi
  trap - EXIT
  say "node $node is idle: $(grep '^NodeName=' "$conf")"
  say "use it with: export SLURM_CONF=$conf"
}

no_jobs() { [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]; }

stop_all() {
  local ids
  if pid_of "$run/slurmctld.pid" slurmctld >/dev/null; then
    ids=$(timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ') || ids=""
    if [ -n "${ids// /}" ]; then
      say "cancelling jobs $ids"
      # shellcheck disable=SC2086
      timeout 10 scancel $ids || say "warning: scancel failed"
      wait_until 30 no_jobs || say "warning: jobs still listed after 30 s: $(timeout 5 squeue -h -o '%i %T' | tr '\n' ' ')"
    fi
  fi
  stop_pid "$run/slurmd.pid" slurmd
  stop_pid "$run/slurmctld.pid" slurmctld
  if [ -e "$run/munged.ours" ]; then
    stop_pid "$run/munged.pid" munged
    rm -f "$run/munged.ours"
  fi
  if [ -e "$run/system-conf.ours" ]; then
    rm -f "$(cat "$run/system-conf.ours")"
    rm -f "$run/system-conf.ours"
  fi
}

case $action in
  start) start ;;
  stop)
    if [ -d "$run" ]; then stop_all; else say "nothing to stop in $state"; fi
    ;;
  *) usage ;;
esac
