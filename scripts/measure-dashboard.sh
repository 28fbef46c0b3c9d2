#!/usr/bin/env bash
# Measures what one open dashboard page costs the agent: the daemon's CPU over SECS seconds
# (default 60, from /proc/PID/stat) with the dashboard configured but no page open, then with one
# headless Chromium tab on the page (server-sent events, one snapshot a second), against
# bin/rig-sim on loopback. The difference is the cost of serving the page. Chromium's own CPU is
# not counted (on a rig the page is open on another machine, through an SSH tunnel).
# Usage: make build && scripts/measure-dashboard.sh [SECS]   (Linux; needs chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
secs=${1:-60}
dir=$(mktemp -d -t hcp-dash.XXXXXX)
sim_pid=""; agent_pid=""; chrome_pid=""
cleanup() {
  for pid in $chrome_pid $agent_pid $sim_pid; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
export HCP_RIG_SIM_DIR=$dir HCP_STATE_DIR=$dir/state
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
pct() { awk -v t="$1" -v hz="$hz" -v s="$secs" 'BEGIN {printf "%.2f", 100 * t / hz / s}'; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s/^agent:$/agent:\n  dashboard_listen: 127.0.0.1:$port/" configs/sim.yaml >"$dir/hcp-edge.yaml"

"$BIN/rig-sim" run --dir "$dir" >"$dir/sim.log" 2>&1 & sim_pid=$!
for _ in $(seq 100); do [ -S "$dir/control.sock" ] && break; sleep 0.05; done
"$BIN/hcp-edge" run --config "$dir/hcp-edge.yaml" >"$dir/agent.log" 2>&1 & agent_pid=$!
until "$BIN/hcp-edge" status --json >/dev/null 2>&1; do sleep 0.01; done
sleep 3

c0=$(cpu_ticks "$agent_pid"); sleep "$secs"; c1=$(cpu_ticks "$agent_pid")
idle=$((c1 - c0))
echo "agent, dashboard configured, no page open: $(pct $idle) % of one core over $secs s"

chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir="$dir/chrome" \
  --remote-debugging-port=0 "http://127.0.0.1:$port/" >"$dir/chrome.log" 2>&1 & chrome_pid=$!
sleep 5 # the page loads and opens its event stream
c0=$(cpu_ticks "$agent_pid"); sleep "$secs"; c1=$(cpu_ticks "$agent_pid")
open=$((c1 - c0))
echo "agent, one page open (1 snapshot/s):         $(pct $open) % of one core over $secs s"
echo "cost of serving the page:                     $(pct $((open - idle))) % of one core"
conns=$(ss -Htn state established "( sport = :$port )" 2>/dev/null | wc -l)
echo "  (connections to the dashboard while measuring: $conns)"
kill -TERM "$chrome_pid" 2>/dev/null; wait "$chrome_pid" 2>/dev/null || true; chrome_pid=""

# The same cost measured directly, above the noise of a shared machine: the agent's CPU for N
# snapshots fetched back to back (what the page's stream sends once a second).
n=300
c0=$(cpu_ticks "$agent_pid")
for _ in $(seq "$n"); do curl -fsS -o /dev/null "http://127.0.0.1:$port/api/state"; done
c1=$(cpu_ticks "$agent_pid")
awk -v t=$((c1 - c0)) -v hz="$hz" -v n="$n" 'BEGIN {ms = 1000 * t / hz / n;
  printf "agent CPU per snapshot: %.2f ms (%d snapshots) -> %.2f %% of one core at one snapshot a second\n", ms, n, ms / 10}'
