#!/usr/bin/env bash
# Modbus TCP round trips per second against the rig simulator: our driver
# (drivers/hil BenchmarkSimModbusTCPRead, drivers/modbus Bus) and mbpoll
# (libmodbus, a master nobody here wrote), against the SAME rig-sim process in
# the same run, reading the furnace's 9 input registers (unit 1, FC 04).
#
#   scripts/bench-modbus.sh            # defaults: -count=5, mbpoll N=10000 x 5
#   MBPOLL_N=5000 RUNS=7 scripts/bench-modbus.sh
#
# Prints the medians of both, and the ratio ours/mbpoll. mbpoll is given a
# repeated slave list (-a 1,1,...,1, N times) with -1, so one process polls N
# times over one TCP connection. Its rate is computed as (N-1)/(t(N)-t(1)) so
# that process start-up and connection set-up cancel out; the raw N/t(N) is
# printed as well. The script verifies that mbpoll really sends N requests:
# it counts the replies mbpoll prints, counts its send syscalls with strace
# (when installed), and checks that the time per request scales with N.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
MBPOLL_N=${MBPOLL_N:-10000}
GO=${GO:-go}

command -v mbpoll >/dev/null || { echo "bench-modbus: mbpoll not found (apt-get install mbpoll)" >&2; exit 1; }

tmp=$(mktemp -d)
sim_pid=
cleanup() {
	if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
		kill "$sim_pid" 2>/dev/null || true
		wait "$sim_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
now_ns() { date +%s%N; }

# 1. The simulator, built from this tree, on a free port in a temp directory.
echo "== building rig-sim"
"$GO" build -o "$tmp/rig-sim" ./cmd/rig-sim
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
addr="127.0.0.1:$port"
"$tmp/rig-sim" run --dir "$tmp/run" --modbus-addr "$addr" >"$tmp/rig-sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	kill -0 "$sim_pid" 2>/dev/null || { echo "rig-sim died:"; cat "$tmp/rig-sim.log"; exit 1; }
	sleep 0.05
done
echo "== rig-sim pid $sim_pid on $addr (run dir $tmp/run)"

# 2. Our driver: the Go benchmark against that process.
echo "== go test -bench BenchmarkSimModbusTCPRead -count=$RUNS (HCP_BENCH_MODBUS_ADDR=$addr)"
HCP_BENCH_MODBUS_ADDR=$addr "$GO" test -run '^$' -bench '^BenchmarkSimModbusTCPRead$' -benchmem -count="$RUNS" ./drivers/hil/ | tee "$tmp/bench.txt"
ours=$(awk '/^BenchmarkSimModbusTCPRead/ {for (i=1;i<=NF;i++) if ($(i+1)=="rt/s") print $i}' "$tmp/bench.txt" | median)

# 3. mbpoll against the same process.
slaves() { local n=$1 s=1; for ((i = 1; i < n; i++)); do s+=",1"; done; echo "$s"; }
list_n=$(slaves "$MBPOLL_N")
list_half=$(slaves $((MBPOLL_N / 2)))
mb() { mbpoll -m tcp -p "$port" -a "$1" -t 3 -r 1 -c 9 -1 -o 2 127.0.0.1; }
run_timed() { # list → seconds
	local t0 t1
	t0=$(now_ns); mb "$1" >"$tmp/mb.out"; t1=$(now_ns)
	echo "scale=6; ($t1 - $t0) / 1000000000" | bc
}

echo "== verifying that mbpoll sends one request per listed slave"
mb "$list_n" >"$tmp/mb.out"
polls=$(grep -c '^-- Polling slave 1' "$tmp/mb.out" || true)
values=$(grep -c '^\[[0-9]*\]:' "$tmp/mb.out" || true)
uptimes=$(awk '/^\[7\]:/ {print $2}' "$tmp/mb.out" | sort -u | wc -l)
echo "   N=$MBPOLL_N: $polls polls printed, $values register values ($((MBPOLL_N * 9)) expected), $uptimes distinct uptime readings"
[ "$polls" -eq "$MBPOLL_N" ] && [ "$values" -eq $((MBPOLL_N * 9)) ] || { echo "mbpoll did not poll $MBPOLL_N times"; exit 1; }
if command -v strace >/dev/null; then
	# Each request is one 12-byte sendto: MBAP (transaction id, protocol 0,
	# length 6, unit 1) + FC 04, address 0, quantity 9 — the bytes after the
	# transaction id are fixed.
	strace -f -qq -e trace=sendto,send,sendmsg -o "$tmp/strace.txt" \
		mbpoll -m tcp -p "$port" -a "$list_n" -t 3 -r 1 -c 9 -1 -o 2 127.0.0.1 >/dev/null
	sends=$(grep -c -F '\0\0\0\6\1\4\0\0\0\t", 12,' "$tmp/strace.txt" || true)
	others=$(($(wc -l <"$tmp/strace.txt") - sends))
	echo "   strace: mbpoll sent $sends FC 04 requests (12-byte MBAP frames) for N=$MBPOLL_N, plus $others other send syscalls"
	[ "$sends" -eq "$MBPOLL_N" ] || { echo "request count differs from N"; head "$tmp/strace.txt"; exit 1; }
else
	echo "   strace not installed: syscall count skipped"
fi

echo "== timing mbpoll: N=1, N=$((MBPOLL_N / 2)), N=$MBPOLL_N, $RUNS runs each"
t1s=() tns=() ths=()
for ((r = 0; r < RUNS; r++)); do
	t1s+=("$(run_timed 1)")
	ths+=("$(run_timed "$list_half")")
	tns+=("$(run_timed "$list_n")")
done
t1=$(printf '%s\n' "${t1s[@]}" | median)
th=$(printf '%s\n' "${ths[@]}" | median)
tn=$(printf '%s\n' "${tns[@]}" | median)
echo "   t(1) runs:   ${t1s[*]} s"
echo "   t(N/2) runs: ${ths[*]} s"
echo "   t(N) runs:   ${tns[*]} s"
per_n=$(echo "scale=9; ($tn - $t1) / ($MBPOLL_N - 1) * 1000000" | bc)
per_h=$(echo "scale=9; ($th - $t1) / ($MBPOLL_N / 2 - 1) * 1000000" | bc)
echo "   time per request: $per_h µs at N/2, $per_n µs at N (linear scaling: these should agree)"
mbpoll_rate=$(echo "scale=1; ($MBPOLL_N - 1) / ($tn - $t1)" | bc)
mbpoll_raw=$(echo "scale=1; $MBPOLL_N / $tn" | bc)
ratio=$(echo "scale=2; $ours / $mbpoll_rate" | bc)

echo
echo "== results (same rig-sim process, 9 input registers of unit 1, one TCP connection each)"
printf '   %-44s %12s rt/s  (median of %d)\n' "ours (drivers/modbus Bus, go test -bench)" "$ours" "$RUNS"
printf '   %-44s %12s rt/s  (median, start-up subtracted)\n' "mbpoll $(mbpoll -V 2>&1 | head -1 | awk '{print $NF}') (libmodbus), N=$MBPOLL_N" "$mbpoll_rate"
printf '   %-44s %12s rt/s  (N / t(N), start-up included)\n' "mbpoll raw" "$mbpoll_raw"
printf '   %-44s %12s\n' "ratio ours/mbpoll" "$ratio"
