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
#
# Then the generic driver reading the furnace controller (drivers/hil
# BenchmarkSimFurnaceSnapshot: regmap.Controller.Snapshot, every channel, and
# Controller.Status, what the monitor polls at 20 Hz), in readings per second,
# beside mbpoll reading the same register spans against the same rig-sim
# process: on the simulator's controller (profile hcp-sim-tc: snapshot input
# registers 0..8 and holding 0..5, 2 reads), and on a second rig-sim serving
# the Eurotherm 3200 map (--furnace-model eurotherm3200, profile
# eurotherm-3200: 6 holding-register reads, 5 for status, the analogue ones in the IEEE float
# region; the map has gaps). mbpoll polls one table and one span per process, so its snapshot rate
# is 1 / the sum of its per-request times over the spans, each timed as above
# ((t(N) - t(1)) / (N - 1), N=SNAP_N, default MBPOLL_N). The script checks that
# the span list it gives mbpoll has as many reads as the driver's snapshot.
#   SNAPSHOT=0 scripts/bench-modbus.sh   # the 9-register row alone
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
MBPOLL_N=${MBPOLL_N:-10000}
SNAP_N=${SNAP_N:-$MBPOLL_N}
SNAPSHOT=${SNAPSHOT:-1}
GO=${GO:-go}

command -v mbpoll >/dev/null || { echo "bench-modbus: mbpoll not found (apt-get install mbpoll)" >&2; exit 1; }

tmp=$(mktemp -d)
sim_pid=
euro_pid=
cleanup() {
	for pid in $sim_pid $euro_pid; do
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
now_ns() { date +%s%N; }

# 1. The simulator, built from this tree, on a free port in a temp directory.
echo "== building rig-sim"
"$GO" build -o "$tmp/rig-sim" ./cmd/rig-sim
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
start_sim() { # name port [rig-sim flags...]; sets started_pid
	local name=$1 p=$2
	shift 2
	"$tmp/rig-sim" run --dir "$tmp/$name" --modbus-addr "127.0.0.1:$p" "$@" >"$tmp/$name.log" 2>&1 &
	started_pid=$!
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then break; fi
		kill -0 "$started_pid" 2>/dev/null || { echo "rig-sim died:"; cat "$tmp/$name.log"; exit 1; }
		sleep 0.05
	done
	echo "== rig-sim $* pid $started_pid on 127.0.0.1:$p (run dir $tmp/$name)"
}
port=$(free_port)
addr="127.0.0.1:$port"
start_sim run "$port"
sim_pid=$started_pid

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

# 4. The generic driver's snapshot and status against mbpoll reading the same spans.
# snap_bench LABEL PORT PROFILE: the Go benchmark, both sub-benchmarks.
snap_bench() {
	echo "== go test -bench BenchmarkSimFurnaceSnapshot -count=$RUNS (HCP_BENCH_MODBUS_ADDR=127.0.0.1:$2 HCP_BENCH_FURNACE_PROFILE=$3)"
	HCP_BENCH_MODBUS_ADDR=127.0.0.1:$2 HCP_BENCH_FURNACE_PROFILE=$3 "$GO" test -run '^$' -bench '^BenchmarkSimFurnaceSnapshot$' -benchmem -count="$RUNS" ./drivers/hil/ | tee "$tmp/snap-$1.txt"
}
# snap_metric LABEL SUB UNIT: the median of a sub-benchmark's metric.
snap_metric() { awk -v sub_="BenchmarkSimFurnaceSnapshot/$2-" -v u="$3" 'index($1, sub_) == 1 {for (i=1;i<=NF;i++) if ($(i+1)==u) print $i}' "$tmp/snap-$1.txt" | median; }
# span_us PORT TYPE REF COUNT: mbpoll's median time per request (µs) for one span
# (mbpoll -t TYPE -r REF -c COUNT, REF 1-based), start-up subtracted; every
# reply is checked to carry COUNT values. Cached by port and span; sets span_val.
declare -A span_cache
span_us() {
	local key="$1:$2:$3:$4"
	if [ -z "${span_cache[$key]:-}" ]; then
		span_cache[$key]=$(span_time "$@")
		echo "   -t $2 -r $3 -c $4: ${span_cache[$key]} µs per request"
	fi
	span_val=${span_cache[$key]}
}
span_time() {
	local p=$1 ty=$2 ref=$3 cnt=$4 t0 t1 a b vals
	local ts1=() tsn=()
	mbs() { mbpoll -m tcp -p "$p" -a "$1" -t "$ty" -r "$ref" -c "$cnt" -1 -o 2 127.0.0.1; }
	mbs "$snap_list" >"$tmp/span.out" || true
	vals=$(grep -c '^\[[0-9]*\]:' "$tmp/span.out" || true)
	[ "$vals" -eq $((SNAP_N * cnt)) ] || { echo "mbpoll -t $ty -r $ref -c $cnt: $vals values, $((SNAP_N * cnt)) expected" >&2; head -5 "$tmp/span.out" >&2; exit 1; }
	for ((r = 0; r < RUNS; r++)); do
		t0=$(now_ns); mbs 1 >/dev/null; t1=$(now_ns); ts1+=("$((t1 - t0))")
		t0=$(now_ns); mbs "$snap_list" >/dev/null; t1=$(now_ns); tsn+=("$((t1 - t0))")
	done
	a=$(printf '%s\n' "${ts1[@]}" | median)
	b=$(printf '%s\n' "${tsn[@]}" | median)
	echo "scale=3; ($b - $a) / ($SNAP_N - 1) / 1000" | bc
}
# snap_row LABEL PORT PROFILE SUB SPANS...: each span TYPE:REF:COUNT; checks the
# span count against the driver's reads and adds a result row.
snap_rows=()
snap_row() {
	local label=$1 p=$2 id=$3 sub=$4 sum=0 reads ours peer
	shift 4
	reads=$(snap_metric "$label" "$sub" reads/snap); reads=${reads%.*}
	[ "$#" -eq "$reads" ] || { echo "bench-modbus: $id $sub: the driver takes $reads reads, the mbpoll span list has $#: update the list" >&2; exit 1; }
	echo "== mbpoll, $id $sub: the same $# spans ($*), N=$SNAP_N each, $RUNS runs of t(1) and t(N)"
	for sp in "$@"; do
		IFS=: read -r ty ref cnt <<<"$sp"
		span_us "$p" "$ty" "$ref" "$cnt"
		sum=$(echo "scale=3; $sum + $span_val" | bc)
	done
	peer=$(echo "scale=1; 1000000 / $sum" | bc)
	ours=$(snap_metric "$label" "$sub" snap/s)
	echo "   sum $sum µs: $peer reads of the $# spans a second"
	snap_rows+=("$id $sub|$reads|$ours|$peer|$(awk -v a="$ours" -v b="$peer" 'BEGIN {printf "%.2f", a / b}')")
}
if [ "$SNAPSHOT" != 0 ]; then
	snap_list=$(slaves "$SNAP_N")
	# hcp-sim-tc on the same rig-sim process. Snapshot: input registers 0..8 (FC 04) and
	# holding 0..5 (FC 03); status: input 0..5, holding 0..2.
	snap_bench sim "$port" hcp-sim-tc
	snap_row sim "$port" hcp-sim-tc snapshot 3:1:9 4:1:6
	snap_row sim "$port" hcp-sim-tc status 3:1:6 4:1:3
	# eurotherm-3200 on a rig-sim of its own (the instrument refuses a read across an unmapped
	# gap). The analogue values in the IEEE float region (0x8000 + 2 × address, two registers
	# each): snapshot 0x8002..0x800B (1..5), 0x801A (13), 0x8034 (26), 0x803C (30), 0x8046 (35),
	# and the status word 75; status: the same without 13. mbpoll's references are 1-based.
	eport=$(free_port)
	start_sim euro "$eport" --furnace-model eurotherm3200
	euro_pid=$started_pid
	snap_bench euro "$eport" eurotherm-3200
	snap_row euro "$eport" eurotherm-3200 snapshot 4:32771:10 4:32795:2 4:32821:2 4:32829:2 4:32839:2 4:76:1
	snap_row euro "$eport" eurotherm-3200 status 4:32771:10 4:32821:2 4:32829:2 4:32839:2 4:76:1
fi

echo
echo "== results (same rig-sim process, 9 input registers of unit 1, one TCP connection each)"
printf '   %-44s %12s rt/s  (median of %d)\n' "ours (drivers/modbus Bus, go test -bench)" "$ours" "$RUNS"
printf '   %-44s %12s rt/s  (median, start-up subtracted)\n' "mbpoll $(mbpoll -V 2>&1 | head -1 | awk '{print $NF}') (libmodbus), N=$MBPOLL_N" "$mbpoll_rate"
printf '   %-44s %12s rt/s  (N / t(N), start-up included)\n' "mbpoll raw" "$mbpoll_raw"
printf '   %-44s %12s\n' "ratio ours/mbpoll" "$ratio"
for r in "${snap_rows[@]}"; do
	IFS='|' read -r id reads ours_s peer_s ratio_s <<<"$r"
	echo
	echo "== results: furnace $id ($reads reads; rig-sim and mbpoll as above)"
	printf '   %-44s %12s snap/s  (median of %d)\n' "$id (regmap, go test -bench)" "$ours_s" "$RUNS"
	printf '   %-44s %12s snap/s  (1 / sum of per-span medians)\n' "mbpoll same spans $id" "$peer_s"
	printf '   %-44s %12s\n' "ratio $id ours/mbpoll" "$ratio_s"
done
echo "   load average $(cut -d' ' -f1-3 /proc/loadavg)"
