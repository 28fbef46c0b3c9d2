#!/usr/bin/env bash
# `make commission`: what a technician runs the day a rig is connected, shown on rig-sim's REAL
# controller models (a Eurotherm 3200 and an Advantech ADAM-6052, emulated from their manuals)
# with configs/sim-eurotherm.yaml: `hcp-edge config check`, `hcp-edge envelope coverage`, then
# `hcp-edge probe` (every channel of every instrument through its profile: raw, engineering value,
# unit, inside the declared range or not) and `hcp-edge probe --write-check` (each output to its
# other level and back, read back). docs/INSTRUMENTS.md, "Checking and commissioning".
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
CFG=configs/sim-eurotherm.yaml
dir=$(mktemp -d /tmp/hcp-commission.XXXXXX)
export HCP_RIG_SIM_DIR=$dir HCP_STATE_DIR=$dir/state
mkdir -p "$HCP_STATE_DIR"
sim_pid=
cleanup() { [ -z "$sim_pid" ] || { kill "$sim_pid" 2>/dev/null; wait "$sim_pid" 2>/dev/null || true; }; rm -rf "$dir"; }
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
hold=$(sed -n 's/.*relay_watchdog: *\([0-9a-z.]*\).*/\1/p' "$CFG" | head -n 1)

step "rig-sim with the real controller models: --furnace-model eurotherm3200 --dio-model adam6052 --relay-watchdog $hold"
"$BIN/rig-sim" run --dir "$dir" --furnace-model eurotherm3200 --dio-model adam6052 --relay-watchdog "$hold" >"$dir/rig-sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do [ -S "$dir/control.sock" ] && break; sleep 0.05; done
[ -S "$dir/control.sock" ] || { cat "$dir/rig-sim.log"; echo "commission: rig-sim did not start"; exit 1; }

step "hcp-edge config check $CFG: the layout against the profiles"
"$BIN/hcp-edge" config check "$CFG"

step "hcp-edge envelope coverage: every writable channel of every profile, with the rule that bounds it"
"$BIN/hcp-edge" envelope coverage --config "$CFG"

step "hcp-edge probe: every channel through its profile"
"$BIN/hcp-edge" probe --config "$CFG"

step "hcp-edge probe --write-check --operator tess"
"$BIN/hcp-edge" probe --config "$CFG" --write-check --operator tess | sed -n '/^WRITE CHECK/,$p'
echo
echo "commission: every channel read inside its declared range, every output's wiring confirmed"
