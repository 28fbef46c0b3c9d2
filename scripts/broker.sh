#!/usr/bin/env bash
# Starts a local RabbitMQ for development and the transport/ broker tests, idempotently:
#   - installs Debian's rabbitmq-server when it is missing and we are root (or have sudo);
#   - starts it detached (the systemd service when systemd runs, else rabbitmq-server -detached);
#   - waits, bounded, until it answers;
#   - creates the callee user hcp-edge and the caller users harness-alpha-001 and
#     harness-beta-002, each with its development password;
#   - provisions the vhost `hcp` and their permissions from configs/sim.yaml with
#     `hcp-edge broker provision` (the narrowest grants: see docs/BROKER.md);
#   - prints the AMQP URLs it set up.
# Run it again at any time: every step checks before it acts.
#
# Environment:
#   HCP_BROKER_WAIT   seconds to wait for the broker to answer (default 90)
#   HCP_BROKER_HOST   host in the printed URLs (default 127.0.0.1)
#   HCP_BROKER_PORT   AMQP port in the printed URLs (default 5672)
#   HCP_EDGE_PASS, HCP_ALPHA_PASS, HCP_BETA_PASS   passwords (development defaults below)
#   HCP_BROKER_VHOST  the vhost to provision (default hcp)
#   HCP_EDGE_BIN      the hcp-edge binary (default bin/hcp-edge, else `go run ./cmd/hcp-edge`)
#
# The transport tests read HCP_AMQP_URL and default to the callee URL printed here
# (amqp://hcp-edge:hcp-edge-dev@127.0.0.1:5672/hcp).
set -euo pipefail

WAIT=${HCP_BROKER_WAIT:-90}
HOST=${HCP_BROKER_HOST:-127.0.0.1}
PORT=${HCP_BROKER_PORT:-5672}
VHOST=${HCP_BROKER_VHOST:-hcp}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EDGE_PASS=${HCP_EDGE_PASS:-hcp-edge-dev}
ALPHA_PASS=${HCP_ALPHA_PASS:-harness-alpha-dev}
BETA_PASS=${HCP_BETA_PASS:-harness-beta-dev}

log() { echo "broker: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; fi
fi

# 1. Install when missing.
if ! command -v rabbitmqctl >/dev/null 2>&1 && [ ! -x /usr/sbin/rabbitmqctl ]; then
  if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
    die "rabbitmq-server is not installed and we are neither root nor allowed sudo: apt-get install rabbitmq-server"
  fi
  log "installing rabbitmq-server (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # A package's postinst may try to start the service; without systemd or init scripts
  # that may fail harmlessly. policy-rc.d 101 stops it from starting at all; we start it below.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends rabbitmq-server >/dev/null
  log "installed rabbitmq-server"
fi
export PATH="$PATH:/usr/sbin:/usr/lib/rabbitmq/bin"

# rabbitmqctl must run as root or as the rabbitmq user (it reads the Erlang cookie).
ctl() { $SUDO rabbitmqctl "$@"; }

answers() { timeout 15 $SUDO rabbitmqctl -q status >/dev/null 2>&1; }

# 2. Start when not running.
if answers; then
  log "already running"
else
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    log "starting via systemd"
    $SUDO systemctl start rabbitmq-server
  else
    log "starting detached (no systemd)"
    # -detached returns at once; logs go to /var/log/rabbitmq.
    if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1; then
      # Run as the rabbitmq user so file ownership stays what the package expects.
      su -s /bin/sh rabbitmq -c 'HOME=/var/lib/rabbitmq /usr/sbin/rabbitmq-server -detached' ||
        /usr/sbin/rabbitmq-server -detached
    else
      $SUDO rabbitmq-server -detached
    fi
  fi
fi

# 3. Wait, bounded, until it answers.
deadline=$(( $(date +%s) + WAIT ))
until timeout 20 $SUDO rabbitmqctl -q await_startup >/dev/null 2>&1 && answers; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    die "RabbitMQ did not answer within ${WAIT}s; see /var/log/rabbitmq/"
  fi
  sleep 1
done
log "running ($(ctl -q eval 'rabbit_misc:version().' 2>/dev/null | tr -d '"' || echo '?'))"

# 4. Users with their development passwords, then the vhost and the narrowest permissions
# derived from the agent's configuration — idempotent.
ensure_user() { # name password
  local name=$1 pass=$2
  if ctl -q list_users | awk '{print $1}' | grep -qx "$name"; then
    ctl -q change_password "$name" "$pass" >/dev/null
  else
    ctl -q add_user "$name" "$pass" >/dev/null
    log "user $name created"
  fi
}

# No user gets the `impersonator` tag (provision removes it): RabbitMQ then validates the AMQP
# user_id property against the publishing connection's login, which is how the callee learns
# who a caller is, and how a caller knows an event is the callee's.
ensure_user hcp-edge "$EDGE_PASS"
ensure_user harness-alpha-001 "$ALPHA_PASS"
ensure_user harness-beta-002 "$BETA_PASS"

# The permissions are never written by hand: `hcp-edge broker provision` derives them from
# configs/sim.yaml's callee (agent.amqp) and callers (gate.broker_users, gate.callers).
if [ -n "${HCP_EDGE_BIN:-}" ]; then edge=("$HCP_EDGE_BIN")
elif [ -x "$ROOT/bin/hcp-edge" ]; then edge=("$ROOT/bin/hcp-edge")
else edge=(go run "$ROOT/cmd/hcp-edge"); fi
HCP_AMQP_URL="amqp://hcp-edge:${EDGE_PASS}@${HOST}:${PORT}/${VHOST}" HCP_CALLEE_ID=hcp-edge \
  "${edge[@]}" broker provision --config "$ROOT/configs/sim.yaml" | sed 's/^/broker: provision: /' >&2 ||
  die "broker provision failed"

# 5. TLS: the EXTERNAL mechanism (client certificates) for the TLS tests and production mTLS.
bash "$ROOT/scripts/broker-tls.sh"

# 5. Print the URLs.
echo "HCP_AMQP_URL=amqp://hcp-edge:${EDGE_PASS}@${HOST}:${PORT}/${VHOST}"
echo "HCP_AMQP_URL_ALPHA=amqp://harness-alpha-001:${ALPHA_PASS}@${HOST}:${PORT}/${VHOST}"
echo "HCP_AMQP_URL_BETA=amqp://harness-beta-002:${BETA_PASS}@${HOST}:${PORT}/${VHOST}"
