#!/usr/bin/env bash
# A Slurm cluster on this machine for tests and for trying the Slurm engine: munged, mariadb,
# slurmdbd (so sacct works), slurmctld and one slurmd per compute node. No systemd needed.
#
#   scripts/slurm-local.sh install          apt packages (root; Debian: slurm-wlm munge slurmdbd mariadb-server)
#   scripts/slurm-local.sh start            one node ("localhost") on loopback
#   scripts/slurm-local.sh start --nodes N  N nodes (node1..nodeN), each slurmd in a network namespace of its
#                                           own (moeconsole-nodeI) with its own host name, /etc/hosts, spool
#                                           and log; a veth pair per node into one bridge (mcslurm0) holding
#                                           the controller's address; addresses from one private /24
#                                           ($SLURM_LOCAL_NET, default 10.213.7: .1-.N nodes, .254 controller)
#   scripts/slurm-local.sh stop             stop what start started (by recorded pids); delete links, namespaces
#   scripts/slurm-local.sh status
#   scripts/slurm-local.sh nodes            the compute nodes, one "NAME ADDRESS NAMESPACE" a line
#   scripts/slurm-local.sh exec NODE CMD... run CMD on NODE (its network namespace and host name)
#   scripts/slurm-local.sh pids NODE        the pids of every process on NODE (in its network namespace)
#   scripts/slurm-local.sh lose NODE        the node is lost: its link cut, its slurmd stopped and every
#                                           process left on it killed (a power loss); Slurm marks it DOWN
#                                           after SlurmdTimeout ($SLURM_LOCAL_SLURMD_TIMEOUT, 10 s)
#   SLURM_LOCAL_PREEMPT_MODE=SUSPEND,GANG scripts/slurm-local.sh start --nodes N
#                                           preemption by suspension (default REQUEUE): an "urgent" job
#                                           suspends the "debug" jobs it needs the nodes of
#   scripts/slurm-local.sh restore NODE     link up, slurmd started again; waits until Slurm lists it usable
#   scripts/slurm-local.sh controller stop  only slurmctld stopped (by its recorded pid): jobs keep running on
#                                           the nodes, squeue/scontrol/sbatch fail until it is back
#   scripts/slurm-local.sh controller start slurmctld started again (it recovers its jobs from StateSaveLocation)
#
# The accounting database is the script's own MariaDB: its own data directory, socket and port
# under $SLURM_LOCAL_DIR (loopback only; port $SLURM_LOCAL_DB_PORT if set, else the first free one
# from 3417, kept in $SLURM_LOCAL_DIR/run/db.port while the server lives). A MariaDB or MySQL
# the machine already runs is never connected to, changed or stopped; `stop` ends only the
# processes `start` recorded as its own ($SLURM_LOCAL_DIR/run/*.pid).
#
# Only the namespaces' own addresses (and loopback, for slurmdbd and mariadb) are ever contacted:
# the nodes have no default route. Everything lives under $SLURM_LOCAL_DIR (default
# /tmp/moeconsole-slurm); slurm.conf is written to /etc/slurm/slurm.conf (where Debian's clients
# look) unless SLURM_CONF is set.
set -euo pipefail
DIR=${SLURM_LOCAL_DIR:-/tmp/moeconsole-slurm}
CONF=${SLURM_CONF:-/etc/slurm/slurm.conf}
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
DB_PASS=moeconsole-local
DB_PORT_FILE=$DIR/run/db.port
DB_PORT=${SLURM_LOCAL_DB_PORT:-}
DB_DATA=$DIR/mysql
DB_SOCK=$DIR/run/mysqld.sock
DB_PID=$DIR/run/mariadb.pid
NET=${SLURM_LOCAL_NET:-10.213.7}
CTL_ADDR=$NET.254
BRIDGE=mcslurm0
NS_PREFIX=moeconsole-node
SLURMD_TIMEOUT=${SLURM_LOCAL_SLURMD_TIMEOUT:-10}
# The cluster's PreemptMode (slurm.conf): REQUEUE by default; SUSPEND,GANG makes an "urgent" job
# suspend the "debug" jobs on its nodes (SIGSTOP under proctrack/linuxproc) and resume them once it ends.
PREEMPT_MODE=${SLURM_LOCAL_PREEMPT_MODE:-REQUEUE}
# Suspension needs the partitions' nodes shared (measured on 22.05: with OverSubscribe=YES the urgent
# job waits on Resources, with FORCE:1 it suspends the debug job and takes its CPUs).
case $PREEMPT_MODE in *SUSPEND*) OVERSUB=FORCE:1 ;; *) OVERSUB=YES ;; esac
MODE_FILE=$DIR/run/nodes   # written by a multi-node start: how many nodes it made

log() { printf 'slurm-local: %s\n' "$*" >&2; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2; shift 2
  for _ in $(seq 1 $((secs * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  log "timed out waiting for $what"; return 1
}

install() {
  [ "$(id -u)" = 0 ] || { log "install needs root"; exit 2; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slurm-wlm munge slurmdbd mariadb-server >/dev/null
}

node_lines() {  # node_lines N: the NodeName and PartitionName lines of slurm.conf
  local n=$1
  if [ "$n" = 0 ]; then
    echo "NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN"
    echo "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=$OVERSUB PriorityTier=1"
    echo "PartitionName=urgent Nodes=localhost MaxTime=INFINITE State=UP OverSubscribe=$OVERSUB PriorityTier=10 PreemptMode=OFF"
    return
  fi
  for i in $(seq 1 "$n"); do
    echo "NodeName=node$i NodeAddr=$NET.$i CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=$OVERSUB PriorityTier=1"
  echo "PartitionName=urgent Nodes=node[1-$n] MaxTime=INFINITE State=UP OverSubscribe=$OVERSUB PriorityTier=10 PreemptMode=OFF"
}

write_configs() {  # write_configs N (0: the one-node loopback cluster)
  local n=$1 ctl=localhost spool=$DIR/spool slurmd_pid=$DIR/run/slurmd.pid slurmd_log=$DIR/log/slurmd.log
  if [ "$n" != 0 ]; then
    # %n is the node's name: one spool, pid file and log per slurmd.
    ctl="localhost($CTL_ADDR)" spool="$DIR/spool/%n" slurmd_pid="$DIR/run/slurmd-%n.pid"
    slurmd_log="$DIR/log/slurmd-%n.log"
  fi
  mkdir -p "$DIR"/{state,spool,log,run} /run/munge "$(dirname "$CONF")"
  chown munge:munge /run/munge
  cat > "$CONF" <<EOF
ClusterName=local
SlurmctldHost=$ctl
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=300
KillWait=5
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$slurmd_pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$slurmd_log
SlurmdTimeout=$([ "$n" = 0 ] && echo 300 || echo "$SLURMD_TIMEOUT")
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
# Preemption for real: a job in the "urgent" partition (PriorityTier=10) that needs a node takes it
# from "debug" jobs (PriorityTier=1), which are requeued (a --no-requeue job is cancelled instead:
# state PREEMPTED); \`scontrol update PartitionName=debug PreemptMode=CANCEL\` switches debug to cancel.
PreemptType=preempt/partition_prio
PreemptMode=$PREEMPT_MODE
$(node_lines "$n")
EOF
  local dbd; dbd="$(dirname "$CONF")/slurmdbd.conf"
  cat > "$dbd" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
EOF
  chmod 600 "$dbd"
}

# ---- the nodes' network: namespaces, veth pairs, one bridge -----------------------------------
ns_of() { echo "$NS_PREFIX${1#node}"; }          # node2 -> moeconsole-node2
host_if() { echo "mcsl${1#node}h"; }             # the veth end on the bridge
node_if() { echo "mcsl${1#node}n"; }             # the end inside the namespace
nodes_made() { cat "$MODE_FILE" 2>/dev/null || echo 0; }
check_node() {
  local n; n=$(nodes_made)
  [[ "$1" =~ ^node([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le "$n" ] \
    || { log "no such node: $1 (this cluster has $n multi-node nodes)"; exit 2; }
}

net_up() {  # net_up N
  local n=$1
  [[ "$NET" =~ ^(10|192\.168|172\.(1[6-9]|2[0-9]|3[01]))\.[0-9]+(\.[0-9]+)?$ ]] && [ "$(tr -cd . <<<"$NET" | wc -c)" = 2 ] \
    || { log "SLURM_LOCAL_NET=$NET: give the first three parts of a private /24 (e.g. 10.213.7)"; exit 2; }
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    if ip -o -4 addr show | grep -q " inet $NET\."; then
      log "$NET.0/24 is already used on this machine: choose another with SLURM_LOCAL_NET"; exit 2
    fi
    ip link add "$BRIDGE" type bridge
    ip addr add "$CTL_ADDR/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  mkdir -p /etc/netns
  for i in $(seq 1 "$n"); do
    local node=node$i ns; ns=$(ns_of "node$i")
    ip netns list | grep -qw "^$ns" || ip netns add "$ns"
    if ! ip link show "$(host_if $node)" >/dev/null 2>&1; then
      ip link add "$(host_if $node)" type veth peer name "$(node_if $node)"
      ip link set "$(node_if $node)" netns "$ns"
      ip link set "$(host_if $node)" master "$BRIDGE"
      ip netns exec "$ns" ip addr add "$NET.$i/24" dev "$(node_if $node)"
    fi
    ip link set "$(host_if $node)" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set "$(node_if $node)" up
    # Bound over /etc/hosts on the node (on_node): every node knows every node by name.
    mkdir -p "/etc/netns/$ns"
    { echo "127.0.0.1 localhost"; echo "$CTL_ADDR slurmctld"
      for j in $(seq 1 "$n"); do echo "$NET.$j node$j"; done; } > "/etc/netns/$ns/hosts"
  done
}

on_node() {  # on_node NODE CMD...: in the node's network namespace, with its host name and /etc/hosts
  # (not `ip netns exec`: it mounts a fresh /sys, hiding the cgroup mounts slurmd needs)
  local node=$1 ns; shift; ns=$(ns_of "$node")
  nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation slave /bin/sh -c \
    'mount --bind "$1" /etc/hosts && hostname "$0" && shift && exec "$@"' "$node" "/etc/netns/$ns/hosts" "$@"
}

start_slurmd() {  # start_slurmd NODE
  local node=$1
  mkdir -p "$DIR/spool/$node"
  on_node "$node" /usr/sbin/slurmd -N "$node"
}

slurmd_pid() { cat "$DIR/run/slurmd-$1.pid" 2>/dev/null || true; }

stop_pid() {  # stop_pid PID: SIGTERM, wait up to 10 s for it to exit
  local pid=$1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  log "pid $pid did not exit on SIGTERM"
}

own_alive() {  # own_alive NAME: the daemon this script started (its pid file under $DIR/run) is alive,
  # and that pid is still that daemon (a pid file left from an earlier boot may name another process)
  local pid comm; pid=$(cat "$DIR/run/$1.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  [ "$comm" = "$1" ] || [ "$comm" = "${1}d" ]   # mariadb's process is mariadbd
}

db() {  # db SQL: as root over the script's own server's socket (never the machine's default one)
  mariadb --no-defaults --protocol=socket --socket="$DB_SOCK" -u root -e "$1"
}

port_taken() {  # port_taken PORT: something listens on it on loopback
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

choose_db_port() {  # the port our own server uses: the one it runs on, else a free one
  if own_alive mariadb; then  # the port it was started with, from its own command line
    DB_PORT=$(tr '\0' '\n' < "/proc/$(cat "$DIR/run/mariadb.pid")/cmdline" | sed -n 's/^--port=//p')
    echo "$DB_PORT" > "$DB_PORT_FILE"; return 0
  fi
  if [ -n "$DB_PORT" ]; then
    port_taken "$DB_PORT" && { log "SLURM_LOCAL_DB_PORT=$DB_PORT is taken by another server: choose another"; exit 2; }
  else
    DB_PORT=3417
    while port_taken "$DB_PORT"; do
      DB_PORT=$((DB_PORT + 1))
      [ "$DB_PORT" -lt 3517 ] || { log "no free loopback port for the accounting database in 3417-3516"; exit 3; }
    done
  fi
  mkdir -p "$DIR/run" && echo "$DB_PORT" > "$DB_PORT_FILE"
}

db_start() {  # the script's own MariaDB: data, socket and pid under $DIR, loopback port $DB_PORT
  own_alive mariadb && return 0
  local installer; installer=$(command -v mariadb-install-db || command -v mysql_install_db)
  if [ ! -d "$DB_DATA/mysql" ]; then
    mkdir -p "$DB_DATA" && chown mysql:mysql "$DB_DATA"
    "$installer" --no-defaults --datadir="$DB_DATA" --user=mysql --auth-root-authentication-method=socket \
      >"$DIR/log/mariadb-install.log" 2>&1 || { log "mariadb-install-db failed (see $DIR/log/mariadb-install.log)"; return 1; }
  fi
  chown mysql:mysql "$DIR/run"
  (mariadbd --no-defaults --datadir="$DB_DATA" --socket="$DB_SOCK" --port="$DB_PORT" --bind-address=127.0.0.1 \
     --pid-file="$DB_PID" --user=mysql --skip-name-resolve >"$DIR/log/mariadb.log" 2>&1 &)
  wait_for 30 "the script's own mariadb" db "SELECT 1"
  # Its own server: the slurm user is ours to (re)define, whatever another server holds.
  db "CREATE OR REPLACE USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
      CREATE OR REPLACE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
}

node_usable() {  # node_usable NODE...: Slurm lists every one idle, mixed or allocated
  local node
  for node in "$@"; do
    sinfo -h -n "$node" -o %t | grep -qE '^(idle|mix|alloc)$' || return 1
  done
}

start() {
  [ "$(id -u)" = 0 ] || { log "start needs root (the daemons run as root here)"; exit 2; }
  command -v slurmctld >/dev/null || { log "slurm is not installed: run '$0 install'"; exit 3; }
  local n=0
  if [ "${1:-}" = --nodes ]; then
    n=${2:-}
    [[ "$n" =~ ^[1-9][0-9]?$ ]] || { log "--nodes: a number of nodes from 1 to 99, got '${n}'"; exit 2; }
    command -v ip >/dev/null && command -v unshare >/dev/null || { log "--nodes needs ip (iproute2) and unshare"; exit 3; }
  elif [ -n "${1:-}" ]; then
    log "start: unknown option $1 (start [--nodes N])"; exit 2
  fi
  local running; running=$(nodes_made)
  if [ -f "$DIR/run/slurmctld.pid" ] && kill -0 "$(cat "$DIR/run/slurmctld.pid")" 2>/dev/null && [ "$running" != "$n" ]; then
    log "a cluster of another shape is running ($running multi-node nodes): '$0 stop' first"; exit 2
  fi
  choose_db_port
  write_configs "$n"
  if [ "$n" != 0 ]; then
    net_up "$n"
    echo "$n" > "$MODE_FILE"
  else
    rm -f "$MODE_FILE"
  fi
  if ! munge -n >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    wait_for 10 munged munge -n
    cp /run/munge/munged.pid "$DIR/run/munged.pid" 2>/dev/null || pgrep -xn munged > "$DIR/run/munged.pid"
  fi
  db_start
  own_alive slurmdbd || /usr/sbin/slurmdbd
  wait_for 30 slurmdbd sacctmgr -n list cluster
  own_alive slurmctld || /usr/sbin/slurmctld
  wait_for 30 slurmctld scontrol ping
  if [ "$n" = 0 ]; then
    own_alive slurmd || /usr/sbin/slurmd -N localhost
    wait_for 30 "node localhost idle" node_usable localhost
  else
    local nodes=()
    for i in $(seq 1 "$n"); do
      local pid; pid=$(slurmd_pid "node$i")
      { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; } || start_slurmd "node$i"
      nodes+=("node$i")
    done
    wait_for 60 "nodes ${nodes[*]} idle" node_usable "${nodes[@]}"
  fi
  log "up: $(sinfo -h -o '%P %D %t %N' | tr '\n' ' ')(logs in $DIR/log)"
}

stop() {
  local n; n=$(nodes_made)
  for i in $(seq 1 "$n"); do stop_pid "$(slurmd_pid "node$i")"; done
  for d in slurmd slurmctld slurmdbd mariadb munged; do
    if own_alive "$d"; then stop_pid "$(cat "$DIR/run/$d.pid")"; fi   # never a pid reused by another process
    rm -f "$DIR/run/$d.pid"
  done
  if [ "$n" != 0 ]; then
    for i in $(seq 1 "$n"); do
      local ns; ns=$(ns_of "node$i")
      # Whatever a job left on the node ends with it (the namespace is the script's own).
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true          # takes the veth pair with it
      ip link del "$(host_if "node$i")" 2>/dev/null || true
      rm -rf "/etc/netns/$ns"
    done
    rmdir /etc/netns 2>/dev/null || true
    ip link del "$BRIDGE" 2>/dev/null || true
    rm -f "$MODE_FILE"
  fi
  log "stopped"
}

lose() {  # lose NODE: as if it lost power: link cut first (nothing more leaves it), then its processes end
  local node=$1 ns; check_node "$node"; ns=$(ns_of "$node")
  ip link set "$(host_if "$node")" down
  stop_pid "$(slurmd_pid "$node")"
  for pid in $(ip netns pids "$ns"); do kill -9 "$pid" 2>/dev/null || true; done
  log "$node lost: link down, slurmd stopped, its processes killed; Slurm marks it DOWN within ${SLURMD_TIMEOUT}s or so"
}

restore() {  # restore NODE: back in service (ReturnToService=2 lets a DOWN node return when it registers)
  local node=$1; check_node "$node"
  ip link set "$(host_if "$node")" up
  local pid; pid=$(slurmd_pid "$node")
  { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; } || start_slurmd "$node"
  wait_for 90 "$node usable" node_usable "$node"
  log "$node restored: $(sinfo -h -n "$node" -o %t)"
}

controller() {  # controller stop|start: the controller alone, the nodes and their jobs untouched
  case "${1:-}" in
    stop) own_alive slurmctld || { log "no slurmctld of this script is running"; exit 2; }
          stop_pid "$(cat "$DIR/run/slurmctld.pid")"; log "slurmctld stopped" ;;
    start) own_alive slurmctld || /usr/sbin/slurmctld
           wait_for 30 slurmctld scontrol ping; log "slurmctld up" ;;
    *) log "usage: $0 controller stop|start"; exit 2 ;;
  esac
}

status() {
  scontrol ping && sinfo && sacctmgr -n list cluster format=cluster
}

case "${1:-}" in
  install) install ;;
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  nodes) for i in $(seq 1 "$(nodes_made)"); do echo "node$i $NET.$i $(ns_of "node$i")"; done ;;
  exec) [ $# -ge 3 ] || { log "usage: $0 exec NODE CMD..."; exit 2; }; check_node "$2"; node=$2; shift 2; on_node "$node" "$@" ;;
  pids) [ $# = 2 ] || { log "usage: $0 pids NODE"; exit 2; }; check_node "$2"; ip netns pids "$(ns_of "$2")" ;;
  lose) [ $# = 2 ] || { log "usage: $0 lose NODE"; exit 2; }; lose "$2" ;;
  restore) [ $# = 2 ] || { log "usage: $0 restore NODE"; exit 2; }; restore "$2" ;;
  controller) [ $# = 2 ] || { log "usage: $0 controller stop|start"; exit 2; }; controller "$2" ;;
  *) echo "usage: $0 install|start [--nodes N]|stop|status|nodes|exec NODE CMD...|pids NODE|lose NODE|restore NODE|controller stop|start" >&2; exit 2 ;;
esac
