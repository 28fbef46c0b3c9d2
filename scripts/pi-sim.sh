#!/usr/bin/env bash
# `make pi-sim` (part of `make ci`): the agent at a Raspberry Pi's speed, hardware in the loop
# (issue 25). cmd/hcp-edge TestPiSim runs the shipped capabilities, gas-leak trips and e-stops
# against the simulated rig and the real broker three times: the native build of `make dist`,
# its armv7 build under qemu-arm-static, and the armv7 build under qemu-arm-static in a CPU
# quota (cgroup) calibrated so that a CPU-bound loop runs about 10x slower than natively. It
# fails when a capability ends with the wrong verdict in any pass; the figures it measures
# assert nothing. This prints its table with the machine's load; docs/FOOTPRINT.md has one.
#
#   make dist broker && scripts/pi-sim.sh
#
# Needs: root (the cgroup), qemu-arm-static (apt-get install qemu-user-static), the broker of
# scripts/broker.sh, dist/ from `make dist`. Environment: HCP_PI_SIM_N (trips and e-stops per
# pass, 15), HCP_PI_SIM_QUOTA_SCALE (the quota pass's time scale), HCP_PI_SIM_TARGET (the
# slow-down to calibrate the quota for, 10), HCP_PI_SIM_LOG (keep the test's log there).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
log=${HCP_PI_SIM_LOG:-$tmp/pi-sim.log}
load0=$(cut -d' ' -f1-3 /proc/loadavg); t0=$(date +%s)
status=0
HCP_PI_SIM=1 HCP_REQUIRE_PEERS=1 HCP_PI_SIM_OUT="$tmp/table.md" \
  "$GO" test -count=1 -run '^TestPiSim$' -v -timeout 15m ./cmd/hcp-edge/ 2>&1 | tee "$log" || status=$?
echo
echo "pi-sim ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo ?), load average at start $load0, at end $(cut -d' ' -f1-3 /proc/loadavg), $(( $(date +%s) - t0 )) s)"
if [ -s "$tmp/table.md" ]; then cat "$tmp/table.md"; else echo "pi-sim: no table (see the log above)"; fi
if [ "$status" != 0 ]; then echo "pi-sim: FAILED"; exit "$status"; fi
echo "pi-sim: every capability completed with the right verdict in every pass"
