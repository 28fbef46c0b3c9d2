#!/usr/bin/env bash
# What an idle poller pays per wake-up, against the same rig-sim: the same number of Modbus TCP
# reads a second (RATE, default 170, about what the agent makes at rest), made by
#   C, one thread, evenly spaced (c/poll.c: blocking socket, clock_nanosleep),
#   Go, one goroutine, evenly spaced (main.go -g 1),
#   Go, 17 goroutines at 10 Hz each, staggered over the period (-stagger: as the monitor's
#     pollers were before "Third round" in docs/FOOTPRINT.md),
#   Go, 17 goroutines at 10 Hz each, all on the same instants (as they are now).
# Prints each one's CPU (all threads, /proc/PID/task/*/schedstat) as % of a core and per read.
# Usage: make build && scripts/wake-cost/run.sh      (needs gcc for the C peer; Linux)
set -euo pipefail
cd "$(dirname "$0")"
RATE=${RATE:-170} SECS=${SECS:-15} ROUNDS=${ROUNDS:-2}
tmp=$(mktemp -d -t wake-cost.XXXXXX); sim=""
trap '[ -n "$sim" ] && kill "$sim" 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/pollgo" .
have_c=0; if command -v gcc >/dev/null; then gcc -O2 -o "$tmp/pollc" c/poll.c && have_c=1; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
HCP_RIG_SIM_DIR=$tmp ../../bin/rig-sim run --dir "$tmp" --modbus-addr "127.0.0.1:$port" >"$tmp/sim.log" 2>&1 & sim=$!
sleep 2
cpu_ns() { # CMD...: runs it, prints the CPU ns of all its threads at its end
  "$@" >/dev/null & local p=$! last=0 v
  while kill -0 $p 2>/dev/null; do
    v=$(cat /proc/$p/task/*/schedstat 2>/dev/null | awk '{s+=$1} END{print s+0}'); [ "$v" -gt 0 ] && last=$v; sleep 0.2
  done
  wait $p; echo "$last"
}
row() { local name=$1; shift; local ns; ns=$(cpu_ns "$@")
  awk -v n="$name" -v t="$ns" -v s="$SECS" -v r="$RATE" 'BEGIN{printf "%-44s %6.2f %% of a core  %7.1f us/read\n", n, t/s/1e7, t/(r*s)/1000}'; }
for _ in $(seq "$ROUNDS"); do
  [ $have_c = 1 ] && row "C, one thread, evenly spaced" "$tmp/pollc" "$port" "$RATE" "$SECS"
  row "Go, one goroutine, evenly spaced" "$tmp/pollgo" -port "$port" -rate "$RATE" -secs "$SECS" -g 1
  row "Go, 17 goroutines at 10 Hz, staggered" "$tmp/pollgo" -port "$port" -rate "$RATE" -secs "$SECS" -g 17 -stagger
  row "Go, 17 goroutines at 10 Hz, same instants" "$tmp/pollgo" -port "$port" -rate "$RATE" -secs "$SECS" -g 17
done
