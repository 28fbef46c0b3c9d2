#!/usr/bin/env bash
# make demo: bring up the simulated rig, read every instrument through the real drivers,
# inject a fault and watch the agent see it, clear it, and stop everything it started.
# Needs Go only. (Until the session engine lands, the demo exercises the instrument layer;
# the MoS2 task demo replaces it with issue 6.)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
dir=$(mktemp -d -t hcp-demo.XXXXXX)
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
    kill -INT "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

export HCP_RIG_SIM_DIR=$dir
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "starting the simulated rig (bin/rig-sim) in $dir"
"$BIN/rig-sim" run --dir "$dir" >"$dir/rig-sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do [ -S "$dir/control.sock" ] && break; sleep 0.05; done
[ -S "$dir/control.sock" ] || { cat "$dir/rig-sim.log"; echo "demo: rig-sim did not start"; exit 1; }
cat "$dir/rig-sim.log"

step "hcp-edge probe: every instrument through the real drivers (Modbus TCP, serial on ptys, GPIO)"
"$BIN/hcp-edge" probe --spectrum 1000

step "fault: the furnace thermocouple opens (rig-sim fault inject tc-open)"
"$BIN/rig-sim" fault inject tc-open --dir "$dir"
set +e
"$BIN/hcp-edge" probe
rc=$?
set -e
[ "$rc" = 1 ] || { echo "demo: probe should have failed (exit 1) with the thermocouple open, got $rc"; exit 1; }

step "fault cleared: the furnace answers again"
"$BIN/rig-sim" fault clear tc-open --dir "$dir"
"$BIN/hcp-edge" probe --json | head -20
echo "..."

step "what reached the firmware (rig-sim status): writes received"
"$BIN/rig-sim" status --dir "$dir" | tail -15

printf '\ndemo: ok\n'
