#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, on loopback, for tests and for trying the Slurm
# engine: munged, mariadb, slurmdbd (so sacct works), slurmctld, slurmd. No systemd needed.
#
#   scripts/slurm-local.sh install   apt packages (root; Debian: slurm-wlm munge slurmdbd mariadb-server)
#   scripts/slurm-local.sh start     write configs, start the daemons, wait until a job can run
#   scripts/slurm-local.sh stop      stop what start started (by the pids it recorded)
#   scripts/slurm-local.sh status
#
# Everything lives under $SLURM_LOCAL_DIR (default /tmp/moeconsole-slurm); slurm.conf is written
# to /etc/slurm/slurm.conf (where Debian's clients look) unless SLURM_CONF is set.
set -euo pipefail
DIR=${SLURM_LOCAL_DIR:-/tmp/moeconsole-slurm}
CONF=${SLURM_CONF:-/etc/slurm/slurm.conf}
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
DB_PASS=moeconsole-local

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

write_configs() {
  mkdir -p "$DIR"/{state,spool,log,run} /run/munge "$(dirname "$CONF")"
  chown munge:munge /run/munge
  cat > "$CONF" <<EOF
ClusterName=local
SlurmctldHost=localhost
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
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  local dbd; dbd="$(dirname "$CONF")/slurmdbd.conf"
  cat > "$dbd" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
EOF
  chmod 600 "$dbd"
}

start() {
  [ "$(id -u)" = 0 ] || { log "start needs root (the daemons run as root here)"; exit 2; }
  command -v slurmctld >/dev/null || { log "slurm is not installed: run '$0 install'"; exit 3; }
  write_configs
  if ! munge -n >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    wait_for 10 munged munge -n
  fi
  if ! mysqladmin ping >/dev/null 2>&1; then
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    (mariadbd --user=mysql --bind-address=127.0.0.1 --skip-networking=0 >"$DIR/log/mariadb.log" 2>&1 &)
    wait_for 30 mariadb mysqladmin ping
  fi
  mysql -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
            CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
  pgrep -x slurmdbd >/dev/null || /usr/sbin/slurmdbd
  wait_for 30 slurmdbd sacctmgr -n list cluster
  pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
  wait_for 30 slurmctld scontrol ping
  pgrep -x slurmd >/dev/null || /usr/sbin/slurmd -N localhost
  wait_for 30 "node localhost idle" sh -c "sinfo -h -n localhost -o %t | grep -qE '^(idle|mix|alloc)'"
  log "up: $(sinfo -h -o '%P %D %t' | tr '\n' ' ')(logs in $DIR/log)"
}

stop() {
  for d in slurmd slurmctld slurmdbd; do
    local pidfile="$DIR/run/$d.pid"
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      local pid; pid=$(cat "$pidfile")
      kill "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
  if mysqladmin ping >/dev/null 2>&1; then mysqladmin shutdown || true; fi
  if [ -f /run/munge/munged.pid ]; then
    local mpid; mpid=$(cat /run/munge/munged.pid)
    kill "$mpid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
  fi
  log "stopped"
}

status() {
  scontrol ping && sinfo && sacctmgr -n list cluster format=cluster
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
