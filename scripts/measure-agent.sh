#!/usr/bin/env bash
# Measures the agent as a technician runs it, against bin/rig-sim on loopback:
# start-up time (exec to control socket answering), resident memory idle and during the seed's
# MoS2 task, CPU use idle at the default poll rates, and the binary sizes of `make dist`.
# Usage: make build && scripts/measure-agent.sh   (Linux; reads /proc)
#   SKIP_TASK=1   stop after the idle figures (no MoS2 task, no peak RSS)
#   IDLE_S=10     the idle window, seconds
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
dir=$(mktemp -d -t hcp-measure.XXXXXX)
sim_pid=""; agent_pid=""
cleanup() {
  for pid in $agent_pid $sim_pid; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
export HCP_RIG_SIM_DIR=$dir HCP_STATE_DIR=$dir/state
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# RSS split: anonymous (heap, stacks, runtime) and file-backed (the binary's own pages, clean;
# on this kernel nearly all of them: docs/FOOTPRINT.md, "issue 41: idle RSS").
rss_part_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# CPU ns of all the process's threads (what scripts/wake-cost measures its pollers with).
cpu_ns() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{s += $1} END {printf "%d", s}'; }
# write(2)-family syscalls of all its threads: at rest every exchange with the rig (a Modbus
# TCP or RTU request, a serial command, a GPIO request to the simulator) is one write.
syscw() { awk '/^syscw/ {print $2}' "/proc/$1/io"; }
hz=$(getconf CLK_TCK)

# A free port for the simulator's Modbus TCP server (another rig-sim on this machine may hold
# the default 5020), and the shipped sim configuration pointed at it.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
sed "s/127\.0\.0\.1:5020/127.0.0.1:$port/" configs/sim.yaml >"$dir/sim.yaml"
"$BIN/rig-sim" run --dir "$dir" --modbus-addr "127.0.0.1:$port" >"$dir/sim.log" 2>&1 & sim_pid=$!
for _ in $(seq 100); do [ -S "$dir/control.sock" ] && break; sleep 0.05; done

t0=$(date +%s%N)
"$BIN/hcp-edge" run --config "$dir/sim.yaml" >"$dir/agent.log" 2>&1 & agent_pid=$!
until "$BIN/hcp-edge" status --json >/dev/null 2>&1; do
  if ! kill -0 "$agent_pid" 2>/dev/null || [ $(( $(date +%s%N) - t0 )) -gt 30000000000 ]; then
    echo "measure-agent: the agent did not come up:" >&2; tail -n 5 "$dir/agent.log" "$dir/sim.log" >&2; exit 1
  fi
  sleep 0.005
done
t1=$(date +%s%N)
echo "start-up (exec to control socket answering): $(( (t1 - t0) / 1000000 )) ms"

sleep 3
IDLE_S=${IDLE_S:-10}
load=$(cut -d' ' -f1 /proc/loadavg)
w0=$(syscw "$agent_pid"); n0=$(cpu_ns "$agent_pid"); c0=$(cpu_ticks "$agent_pid"); t0=$(date +%s%N)
sleep "$IDLE_S"
c1=$(cpu_ticks "$agent_pid"); n1=$(cpu_ns "$agent_pid"); w1=$(syscw "$agent_pid"); t1=$(date +%s%N)
idle_rss=$(rss_kb "$agent_pid"); idle_anon=$(rss_part_kb "$agent_pid" RssAnon); idle_file=$(rss_part_kb "$agent_pid" RssFile)
idle_cpu=$(awk -v t=$((c1 - c0)) -v hz="$hz" -v s="$IDLE_S" 'BEGIN {printf "%.2f", 100 * t / hz / s}')
idle_cpu_ns=$(awk -v n=$((n1 - n0)) -v d=$((t1 - t0)) 'BEGIN {printf "%.2f", 100 * n / d}')
writes=$(awk -v w=$((w1 - w0)) -v d=$((t1 - t0)) 'BEGIN {printf "%.1f", w / (d / 1e9)}')
echo "idle: RSS $(( idle_rss / 1024 )) MiB (anonymous $idle_anon KiB, file-backed $idle_file KiB), CPU $idle_cpu % of one core over $IDLE_S s (furnace 20 Hz, others 10 Hz); all threads' schedstat $idle_cpu_ns %; $writes writes/s; load $load"
# One machine-readable line for scripts/bench.sh (and one after the task).
echo "kv rss_idle_kib=$idle_rss rss_idle_anon_kib=$idle_anon rss_idle_file_kib=$idle_file cpu_idle_pct=$idle_cpu cpu_idle_sched_pct=$idle_cpu_ns writes_per_s=$writes load1=$load"
[ "${SKIP_TASK:-0}" = 1 ] && exit 0

"$BIN/hcp-edge" arm --operator measure >/dev/null
"$BIN/hcp-edge" submit configs/examples/mos2-task.json >"$dir/submit.json" 2>&1 || true
id=$("$BIN/hcp-edge" sessions --json | python3 -c 'import json,sys; s=json.load(sys.stdin); s=s.get("sessions", s) if isinstance(s, dict) else s; print(s[-1].get("session_id") or s[-1].get("id"))')
"$BIN/hcp-edge" approve "$id" --operator measure >/dev/null
peak=0; ts=$(date +%s)
while "$BIN/hcp-edge" sessions --json | grep -q '"RUNNING"\|"PENDING"'; do
  [ $(( $(date +%s) - ts )) -lt 600 ] || { echo "measure-agent: the MoS2 task did not end in 600 s" >&2; exit 1; }
  r=$(rss_kb "$agent_pid"); [ "$r" -gt "$peak" ] && peak=$r; sleep 0.2
done
echo "during the MoS2 task ($(( $(date +%s) - ts )) s at time scale 300): peak RSS $(( peak / 1024 )) MiB"
echo "kv rss_peak_kib=$peak"
"$BIN/hcp-edge" sessions --all >"$dir/sessions.txt"; tail -n 1 "$dir/sessions.txt"

if [ -d dist ]; then
  echo "binary sizes (make dist):"
  for f in dist/linux-*/hcp-edge; do printf '  %-28s %s bytes\n' "$f" "$(stat -c %s "$f")"; done
fi
