#!/usr/bin/env bash
# make fleet: the fleet benchmark on the local three-node cluster (scripts/cluster.sh).
# N agents (hcp-edge run, one process each) with their own simulated rig (in the benchmark's
# process: rig-sim processes cost more than this 2-core machine can spare, see docs/SCALING.md),
# callee id and broker login; one caller submits to each by callee_id. Prints sessions/s, the
# caller-side event latency p50/p99, per-agent RSS, broker memory, and the growth from the first
# fleet size to the last.
#
# Environment: FLEET_SIZES (default "1,20"), HCP_CLUSTER_DIR as for cluster.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${FLEET_SIZES:-1,20}
max=0
for n in ${SIZES//,/ }; do [ "$n" -gt "$max" ] && max=$n; done

# One broker login per agent, provisioned like the others (cluster.sh's provision function).
users=""
for i in $(seq 1 "$max"); do users="$users hcp-edge-fleet-$(printf %02d "$i"):hcp-edge-fleet-dev"; done
bash scripts/cluster.sh up >/dev/null
HCP_CLUSTER_EXTRA_USERS="$users" bash scripts/cluster.sh provision

echo "fleet: sizes $SIZES on $(bash scripts/cluster.sh status | grep -c running) running nodes" >&2
HCP_FLEET=$SIZES go test -count=1 -run '^TestFleet$' -timeout 60m -v ./cmd/hcp-edge/ 2>&1 |
  tee "${FLEET_LOG:-/tmp/hcp-fleet.log}" | grep -E '^(FLEET|growth|\s+N |\s+[0-9]+ |--- |FAIL|ok|PASS)|fleet_test.go' || true
grep -q '^ok' "${FLEET_LOG:-/tmp/hcp-fleet.log}"
