#!/usr/bin/env bash
# A local three-node RabbitMQ cluster for the failover tests and the fleet benchmark, beside
# (never instead of) the single broker of scripts/broker.sh:
#   cluster.sh [up]      start the nodes that are down, join them, provision; idempotent
#   cluster.sh stop N    stop node N (1..3) — its Erlang VM exits, as on a crash or a reboot
#   cluster.sh start N   start node N again and wait until it answers and has rejoined
#   cluster.sh status    one line per node (running or not, AMQP port, cluster members)
#   cluster.sh urls      print HCP_AMQP_URLS (callee) and the callers' URL lists
#   cluster.sh down      stop every node (the data stays for the next up)
#   cluster.sh purge     down, then delete the data directory
#   cluster.sh provision provision again (with HCP_CLUSTER_EXTRA_USERS)
#   cluster.sh ctl N ARGS...   rabbitmqctl ARGS on node N (with the cluster's cookie)
#
# Isolation from the shared broker (rabbit@$(hostname), port 5672, /var/lib/rabbitmq):
#   - node names hcpc1@localhost … hcpc3@localhost; AMQP ports 5681–5683
#     (HCP_CLUSTER_PORT_BASE+N); distribution ports 25681–25683; no plugins (no HTTP ports);
#   - HOME is the cluster's own directory, so the nodes and our rabbitmqctl calls use its own
#     Erlang cookie, never /var/lib/rabbitmq/.erlang.cookie;
#   - RABBITMQ_MNESIA_BASE, RABBITMQ_LOG_BASE, config, enabled-plugins and env files all live
#     under HCP_CLUSTER_DIR (default /var/tmp/hcp-cluster); /etc/rabbitmq is not read;
#   - every rabbitmqctl call names its node with -n: nothing here can stop the shared broker.
# The one process shared with it is epmd (the port mapper), which every node registers with.
#
# Provisioning (provision below) is the same as scripts/broker.sh's step 4: vhost hcp, users
# hcp-edge, harness-alpha-001, harness-beta-002 with the same development passwords and
# permissions. It is one function so that it can switch to `hcp-edge broker provision --config`
# when that command lands. HCP_CLUSTER_EXTRA_USERS="name:password ..." provisions more users
# the same way (the fleet benchmark's agents and callers).
#
# Environment: HCP_CLUSTER_DIR, HCP_CLUSTER_PORT_BASE (5680), HCP_CLUSTER_WAIT (seconds, 120),
# HCP_CLUSTER_HOST (127.0.0.1, in the printed URLs), HCP_EDGE_PASS, HCP_ALPHA_PASS,
# HCP_BETA_PASS, HCP_CLUSTER_EXTRA_USERS.
set -euo pipefail

DIR=${HCP_CLUSTER_DIR:-/var/tmp/hcp-cluster}
PORT_BASE=${HCP_CLUSTER_PORT_BASE:-5680}
WAIT=${HCP_CLUSTER_WAIT:-120}
HOST=${HCP_CLUSTER_HOST:-127.0.0.1}
NODES=(1 2 3)
VHOST=hcp
EDGE_PASS=${HCP_EDGE_PASS:-hcp-edge-dev}
ALPHA_PASS=${HCP_ALPHA_PASS:-harness-alpha-dev}
BETA_PASS=${HCP_BETA_PASS:-harness-beta-dev}
RMQ_BIN=/usr/lib/rabbitmq/bin

log() { echo "cluster: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ -x "$RMQ_BIN/rabbitmq-server" ] || die "rabbitmq-server is not installed (bash scripts/broker.sh installs it, or apt-get install rabbitmq-server)"

node_name() { echo "hcpc$1@localhost"; }
amqp_port() { echo $((PORT_BASE + $1)); }
dist_port() { echo $((PORT_BASE + 20000 + $1)); }

# The cookie and the per-node files, created once.
prepare() {
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  if [ ! -s "$DIR/.erlang.cookie" ]; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr 'a-f' 'A-F' >"$DIR/.erlang.cookie"
    chmod 400 "$DIR/.erlang.cookie"
  fi
  : >"$DIR/rabbitmq-env.conf"
  echo '[].' >"$DIR/enabled_plugins"
  local n
  for n in "${NODES[@]}"; do
    mkdir -p "$DIR/n$n/mnesia" "$DIR/n$n/log"
    cat >"$DIR/n$n/rabbitmq.conf" <<EOF
listeners.tcp.default = $(amqp_port "$n")
loopback_users = none
# a fleet of agents on one machine: each node may use 15 % of RAM before it blocks publishers
vm_memory_high_watermark.relative = 0.15
EOF
  done
}

# node_env N: the environment of node N and of rabbitmqctl calls about it.
node_env() {
  local n=$1
  echo HOME="$DIR" \
    RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf" \
    RABBITMQ_NODENAME="$(node_name "$n")" \
    RABBITMQ_NODE_PORT="$(amqp_port "$n")" \
    RABBITMQ_DIST_PORT="$(dist_port "$n")" \
    RABBITMQ_CONFIG_FILE="$DIR/n$n/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$DIR/n$n/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$DIR/n$n/mnesia" \
    RABBITMQ_LOG_BASE="$DIR/n$n/log" \
    RABBITMQ_PID_FILE="$DIR/n$n/pid"
}

# ctl N args...: rabbitmqctl on node N, with the cluster's cookie.
ctl() {
  local n=$1; shift
  env $(node_env "$n") timeout 60 "$RMQ_BIN/rabbitmqctl" -n "$(node_name "$n")" "$@"
}

# running N: node N's VM is alive (its pid file names a live process). Cheap: no Erlang CLI.
running() {
  local f="$DIR/n$1/pid"
  [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

start_node() {
  local n=$1
  if running "$n"; then return 0; fi
  log "starting $(node_name "$n") (AMQP $(amqp_port "$n"), distribution $(dist_port "$n"))"
  env $(node_env "$n") "$RMQ_BIN/rabbitmq-server" -detached >>"$DIR/n$n/log/startup.log" 2>&1 ||
    die "rabbitmq-server for node $n did not start; see $DIR/n$n/log/"
}

await_node() {
  local n=$1 deadline=$(( $(date +%s) + WAIT ))
  until ctl "$n" -q await_startup >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "$(node_name "$n") did not start within ${WAIT}s; see $DIR/n$n/log/"
    sleep 1
  done
}

# app_running N: node N's rabbit application runs (not only its Erlang VM: a node a killed
# test left stopping or starting has a VM whose application is down).
app_running() { ctl "$1" -q eval 'rabbit:is_running().' 2>/dev/null | grep -qx true; }

# ensure_app N: node N's application runs: started (again) until WAIT.
ensure_app() {
  local n=$1 deadline=$(( $(date +%s) + WAIT ))
  until app_running "$n"; do
    [ "$(date +%s)" -lt "$deadline" ] || die "$(node_name "$n")'s rabbit application did not start within ${WAIT}s; see $DIR/n$n/log/"
    running "$n" || start_node "$n"
    log "$(node_name "$n"): rabbit application down; starting it"
    ctl "$n" -q start_app >/dev/null 2>&1 || true
    sleep 1
  done
}

# members N: the running nodes of node N's cluster, one per line.
members() {
  ctl "$1" -q eval 'io:format("~s~n", [string:join([atom_to_list(X) || X <- rabbit_nodes:all_running()], " ")]).' 2>/dev/null |
    head -1 | tr ' ' '\n' | grep -v '^ok$' || true
}

# disc members of node N's cluster (running or not).
all_members() {
  ctl "$1" -q eval 'io:format("~s~n", [string:join([atom_to_list(X) || X <- rabbit_nodes:all()], " ")]).' 2>/dev/null |
    head -1 | tr ' ' '\n' | grep -v '^ok$' || true
}

join() {
  local n=$1 first
  first=$(node_name 1)
  if all_members "$n" | grep -qx "$first"; then return 0; fi
  log "joining $(node_name "$n") to $first"
  ctl "$n" -q stop_app
  ctl "$n" -q reset
  ctl "$n" -q join_cluster "$first"
  ctl "$n" -q start_app
  await_node "$n"
}

# provision: the same vhost, users and permissions as scripts/broker.sh, on the cluster (users
# and vhosts are cluster-wide, so one node does). Swap the body for
#   hcp-edge broker provision --config FILE
# once that command exists; the extra users come from HCP_CLUSTER_EXTRA_USERS.
provision() {
  local n=$1
  if ! ctl "$n" -q list_vhosts | grep -qx "$VHOST"; then
    ctl "$n" -q add_vhost "$VHOST"
    log "vhost $VHOST created"
  fi
  local users existing
  users="hcp-edge:$EDGE_PASS harness-alpha-001:$ALPHA_PASS harness-beta-002:$BETA_PASS ${HCP_CLUSTER_EXTRA_USERS:-}"
  existing=$(ctl "$n" -q list_users | awk '{print $1}')
  local pair name pass
  for pair in $users; do
    name=${pair%%:*}; pass=${pair#*:}
    if echo "$existing" | grep -qx "$name"; then
      ctl "$n" -q change_password "$name" "$pass" >/dev/null
    else
      ctl "$n" -q add_user "$name" "$pass" >/dev/null
      log "user $name created"
    fi
    # no tags: in particular never `impersonator` (RabbitMQ validates user_id against the login)
    ctl "$n" -q set_user_tags "$name" >/dev/null
    ctl "$n" -q set_permissions -p "$VHOST" "$name" '^(hcp\.|amq\.gen-).*' '^(hcp\.|amq\.gen-).*' '^(hcp\.|amq\.gen-).*' >/dev/null
  done
}

urls() {
  local user=$1 pass=$2 out="" n
  for n in "${NODES[@]}"; do out="$out${out:+,}amqp://$user:$pass@$HOST:$(amqp_port "$n")/$VHOST"; done
  echo "$out"
}

print_urls() {
  echo "HCP_AMQP_URLS=$(urls hcp-edge "$EDGE_PASS")"
  echo "HCP_AMQP_URLS_ALPHA=$(urls harness-alpha-001 "$ALPHA_PASS")"
  echo "HCP_AMQP_URLS_BETA=$(urls harness-beta-002 "$BETA_PASS")"
}

# a running node to talk to about the cluster
any_running() {
  local n
  for n in "${NODES[@]}"; do if running "$n"; then echo "$n"; return 0; fi; done
  return 1
}

check_n() { case "${1:-}" in 1|2|3) ;; *) die "node number 1, 2 or 3, not '${1:-}'";; esac; }

# cluster_lock re-runs this command holding the lock the cluster's tests hold
# (transport/internal/brokerlock, ClusterPath) while they stop and start nodes: `up` and `down`
# of another checkout (make ci beside a test run) must not race a chaos test's node stops. The
# tests themselves only call stop, start and ctl, which never take it.
#
# The lock is held by flock(1) itself, with -o: the descriptor is closed before this script
# runs again, so the RabbitMQ nodes and epmd that `up` starts as daemons do not inherit it. (An
# `exec 9>lock; flock 9` here once left every node holding the lock for its lifetime, and the
# first cluster test of a fresh machine waited for it until its timeout.)
cluster_lock() {
  if [ -n "${HCP_CLUSTER_LOCK_HELD:-}" ]; then unset HCP_CLUSTER_LOCK_HELD; return 0; fi
  local lock="${TMPDIR:-/tmp}/hcp-edge-cluster-tests.lock"
  if ! flock -n -o "$lock" true; then
    log "waiting for the cluster's tests (another checkout's) to release the cluster"
  fi
  HCP_CLUSTER_LOCK_HELD=1 exec flock -o "$lock" bash "$0" "$@"
}

# no_node_holds_lock: no node's VM (nor epmd) has the cluster lock open; one that had would
# hold it for its lifetime and every cluster test would wait for it.
no_node_holds_lock() {
  local lock="${TMPDIR:-/tmp}/hcp-edge-cluster-tests.lock" n pid fd
  for pid in $(for n in "${NODES[@]}"; do cat "$DIR/n$n/pid" 2>/dev/null; done) $(pgrep -x epmd || true); do
    for fd in /proc/"$pid"/fd/*; do
      [ "$(readlink "$fd" 2>/dev/null)" = "$lock" ] && die "process $pid ($(tr '\0' ' ' < /proc/"$pid"/cmdline | cut -c1-60)) holds $lock"
    done
  done
  return 0
}

cmd=${1:-up}
case "$cmd" in
  up)
    cluster_lock "$@"
    prepare
    for n in "${NODES[@]}"; do start_node "$n"; done
    for n in "${NODES[@]}"; do await_node "$n"; done
    for n in "${NODES[@]}"; do ensure_app "$n"; done
    for n in 2 3; do join "$n"; done
    provision 1
    no_node_holds_lock
    log "running: $(members 1 | tr '\n' ' ')"
    print_urls
    ;;
  stop)
    check_n "${2:-}"
    n=$2
    if running "$n"; then
      log "stopping $(node_name "$n")"
      ctl "$n" -q stop "$DIR/n$n/pid"
    else
      log "$(node_name "$n") is not running"
    fi
    ;;
  start)
    check_n "${2:-}"
    n=$2
    prepare
    start_node "$n"
    await_node "$n"
    ensure_app "$n"
    log "$(node_name "$n") running; cluster: $(members "$n" | tr '\n' ' ')"
    ;;
  status)
    for n in "${NODES[@]}"; do
      if running "$n"; then
        echo "node $n $(node_name "$n") running amqp=$(amqp_port "$n") cluster=[$(members "$n" | tr '\n' ' ' | sed 's/ $//')]"
      else
        echo "node $n $(node_name "$n") stopped amqp=$(amqp_port "$n")"
      fi
    done
    ;;
  urls)
    print_urls
    ;;
  down)
    cluster_lock "$@"
    for n in "${NODES[@]}"; do
      if running "$n"; then log "stopping $(node_name "$n")"; ctl "$n" -q stop "$DIR/n$n/pid" || true; fi
    done
    ;;
  purge)
    "$0" down
    rm -rf "$DIR"
    log "removed $DIR"
    ;;
  provision)
    n=$(any_running) || die "no node is running (cluster.sh up)"
    provision "$n"
    ;;
  ctl)
    check_n "${2:-}"
    n=$2; shift 2
    ctl "$n" "$@"
    ;;
  *)
    die "usage: cluster.sh [up|stop N|start N|status|urls|down|purge|provision|ctl N ARGS...]"
    ;;
esac
