#!/usr/bin/env bash
# The e-stop's time with alerts configured and without (issue 43): PAIRS alternating pairs of
# TestEStopLatency (N e-stops each way: through the daemon, and with the daemon hung), one with
# the default webhook receiver in the configuration, one with HCP_ESTOP_NO_ALERTS=1. Prints each
# run's machine-readable line; compare the medians of the per-run p99s (docs/ALERTS.md).
#   PAIRS=3 N=20 bash scripts/estop-alerts-ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
N=${N:-20}
make --no-print-directory build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/hcp-edge.test" ./cmd/hcp-edge/
for i in $(seq "$PAIRS"); do
  for mode in alerts none; do
    echo "== pair $i, $mode, load $(cut -d' ' -f1 /proc/loadavg)"
    if [ "$mode" = none ]; then export HCP_ESTOP_NO_ALERTS=1; else unset HCP_ESTOP_NO_ALERTS; fi
    (cd cmd/hcp-edge && HCP_EDGE_BIN="$PWD/../../bin/hcp-edge" HCP_ESTOP_LATENCY="$N" \
      "$tmp/hcp-edge.test" -test.run '^TestEStopLatency$' -test.v 2>&1 | grep 'kv way' | sed "s/^ */$mode /")
  done
done
