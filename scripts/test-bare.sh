#!/usr/bin/env bash
# make test-bare: the whole suite as a machine with nothing but Go sees it, on a machine where
# `make ci` has installed and started every peer (issue 40). Two walls, so that no test can
# reach a peer by a path the other does not cover:
#   - a network namespace with only loopback (unshare -n, as root): the broker, the cluster
#     nodes and anything else listening on the host are out of reach;
#   - HCP_HIDE_PEERS=1: every peer lookup (device/devicetest.LookPath, PythonImport, Hidden;
#     transport/amqp/amqptest) reports the peer missing, installed or not.
# HCP_REQUIRE_PEERS is unset, so every peer test must skip loudly; a test that fails here is
# one that fails for a newcomer. Without -race (the peers' absence is what is tested). The
# report (scripts/testreport) also fails a test that went on after a subtest of it skipped.
# Modules must be in the cache already (go mod download runs first, outside the namespace).
# PKGS (default ./...) and RUN (a -run pattern) narrow it, e.g. to show it catching one test:
#   PKGS=./cmd/hcp-edge/ RUN='^TestGrapheneRig$' bash scripts/test-bare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
P=${TEST_P:-4}
TIMEOUT=${TEST_TIMEOUT:-20m}
PKGS=${PKGS:-./...}
RUN=${RUN:-}
$GO mod download
$GO build -o "${TMPDIR:-/tmp}/hcp-testreport" ./scripts/testreport
report="${TMPDIR:-/tmp}/hcp-testreport"
inner="export HCP_HIDE_PEERS=1 GOPROXY=off; unset HCP_REQUIRE_PEERS HCP_AMQP_URL HCP_AMQP_URL_ALPHA HCP_AMQP_URL_BETA HCP_AMQP_URLS HCP_TEST_VHOST;
  $GO test -json -p $P -timeout $TIMEOUT ${RUN:+-run '$RUN'} $PKGS | $report -slowest 10"
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
  echo "test-bare: the suite in a network namespace with only loopback, HCP_HIDE_PEERS=1"
  exec unshare -n -- bash -c "ip link set lo up && $inner"
fi
if [ "${CI:-}" = true ]; then
  echo "test-bare: unshare -n is not available here (needs root): CI must run the bare pass isolated" >&2
  exit 1
fi
echo "test-bare: unshare -n unavailable (not root): HCP_HIDE_PEERS=1 alone hides the peers" >&2
exec bash -c "$inner"
