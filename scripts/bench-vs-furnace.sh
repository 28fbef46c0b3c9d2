#!/usr/bin/env bash
# Issue 33: the generic driver (drivers/regmap) against the hand-written one it replaced
# (drivers/furnace, last at 91041b2), in ONE run, alternating old, new, old, new... so that the
# shared machine's load falls on both alike (docs/FOOTPRINT.md, "Issue 33").
#
#   git worktree add --detach /tmp/wtold 91041b2
#   OLD=/tmp/wtold RUNS=7 scripts/bench-vs-furnace.sh
#
# (a) furnace snapshots/s and status reads/s (the monitor's 20 Hz poll): a throwaway benchmark,
#     the same loops in both trees, added to each tree through `go test -overlay` (nothing is
#     written into either tree): furnace.New(bus, furnace.DefaultOpts()) in OLD,
#     regmaptest.SimFurnace(bus) here, Snapshot and Status, over Modbus TCP against ONE
#     rig-sim process (this tree's, the sim model), 2 s each;
# (b) trip onset to heater-off p99: each tree's envelope/hil BenchmarkTripLatency, TRIPS (200)
#     trips a run;
# (c) the agent's idle CPU: each tree's scripts/measure-agent.sh (SKIP_TASK=1, IDLE_S=10) on its
#     own static build (the flags of scripts/bench.sh).
# Prints every run, the medians and the median of the pairs' new/old ratios, and the load.
set -euo pipefail
cd "$(dirname "$0")/.."
NEW=$PWD
OLD=${OLD:?OLD=path to a checkout of 91041b2 (drivers/furnace)}
RUNS=${RUNS:-7}
# Trips per run of (b): its p99 is the 3rd-worst of 200 (of 50, TestTripLatency's count, it was the
# worst, and one scheduling hiccup on a shared machine decided it).
TRIPS=${TRIPS:-200}
GO=${GO:-go}
[ -f "$OLD/drivers/furnace/furnace.go" ] || { echo "bench-vs-furnace: $OLD has no drivers/furnace" >&2; exit 1; }
tmp=$(mktemp -d)
sim_pid=""; load_pid=""
cleanup() { for p in $sim_pid $load_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

cat >"$tmp/old_test.go" <<'EOF'
package furnace_test

import (
	"context"
	"os"
	"testing"
	"time"

	"hcp-edge/drivers/furnace"
	"hcp-edge/drivers/modbus"
)

// BenchmarkABSnapshot: snapshots/s of the hand-written driver (throwaway, issue 33).
func BenchmarkABSnapshot(b *testing.B) {
	o := modbus.DefaultOpts()
	o.Address, o.Timeout, o.Retries = os.Getenv("HCP_BENCH_MODBUS_ADDR"), 2*time.Second, 0
	bus, err := modbus.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	c, err := furnace.New(bus, furnace.DefaultOpts())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s, err := c.Snapshot(ctx)
		if err != nil || s.At.IsZero() {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "snap/s")
}

// BenchmarkABStatus: Status, what the monitor polls at 20 Hz (the hand-written driver's is its
// full snapshot).
func BenchmarkABStatus(b *testing.B) {
	o := modbus.DefaultOpts()
	o.Address, o.Timeout, o.Retries = os.Getenv("HCP_BENCH_MODBUS_ADDR"), 2*time.Second, 0
	bus, err := modbus.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	c, err := furnace.New(bus, furnace.DefaultOpts())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Status(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s, err := c.Status(ctx)
		if err != nil || s.At.IsZero() {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "snap/s")
}
EOF
sed -e 's/package furnace_test/package regmap_test/' \
  -e 's#"hcp-edge/drivers/furnace"#"hcp-edge/drivers/regmap/regmaptest"#' \
  -e 's/furnace.New(bus, furnace.DefaultOpts())/regmaptest.SimFurnace(bus)/g' \
  -e 's/of the hand-written driver/of the generic driver on hcp-sim-tc/' "$tmp/old_test.go" >"$tmp/new_test.go"
echo "{\"Replace\":{\"$OLD/drivers/furnace/zz_ab_test.go\":\"$tmp/old_test.go\"}}" >"$tmp/ov-old.json"
echo "{\"Replace\":{\"$NEW/drivers/regmap/zz_ab_test.go\":\"$tmp/new_test.go\"}}" >"$tmp/ov-new.json"

echo "== building both trees (old: $OLD at $(git -C "$OLD" rev-parse --short HEAD), new: $(git rev-parse --short HEAD))" >&2
for w in old new; do
  d=$NEW; [ $w = old ] && d=$OLD
  pkg=./drivers/regmap/; [ $w = old ] && pkg=./drivers/furnace/
  (cd "$d" && "$GO" test -overlay "$tmp/ov-$w.json" -c -o "$tmp/snap-$w.test" "$pkg" &&
    "$GO" test -c -o "$tmp/hil-$w.test" ./envelope/hil/ && mkdir -p "$tmp/${w}bin" &&
    # shellcheck disable=SC2046 # the gcflags are several words
    CGO_ENABLED=0 "$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags '-s -w -X main.version=bench' -o "$tmp/${w}bin/" ./cmd/...)
done
(while :; do cut -d' ' -f1 /proc/loadavg; sleep 2; done) >"$tmp/load.txt" & load_pid=$!

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"$tmp/newbin/rig-sim" run --dir "$tmp/sim" --modbus-addr "127.0.0.1:$port" >"$tmp/sim.log" 2>&1 & sim_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
echo "== (a) snapshots, rig-sim pid $sim_pid on :$port, $RUNS pairs" >&2
for ((i = 0; i < RUNS; i++)); do for w in old new; do
  HCP_BENCH_MODBUS_ADDR=127.0.0.1:$port "$tmp/snap-$w.test" -test.run '^$' -test.bench '^BenchmarkAB(Snapshot|Status)$' -test.benchtime=2s -test.count=1 2>&1 |
    grep '^Benchmark' | sed "s/^/$w /" | tee -a "$tmp/snap.txt" >&2
done; done
kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
echo "== (b) trip, $RUNS pairs" >&2
for ((i = 0; i < RUNS; i++)); do for w in old new; do
  d=$NEW; [ $w = old ] && d=$OLD
  (cd "$d/envelope/hil" && "$tmp/hil-$w.test" -test.run '^$' -test.bench '^BenchmarkTripLatency$' -test.benchtime="${TRIPS}x" -test.count=1) 2>&1 |
    awk '/^BenchmarkTripLatency/ {for (i = 3; i < NF; i++) m[$(i+1)] = $i
      printf "kv trips=%d heater_off_p50_ms=%s heater_off_p99_ms=%s reaction_p50_ms=%s reaction_p99_ms=%s\n", m["trips"], m["p50-heater-off-ms"], m["p99-heater-off-ms"], m["p50-reaction-ms"], m["p99-reaction-ms"]}' |
    sed "s/^/$w /" | tee -a "$tmp/trip.txt" >&2 || true
done; done
echo "== (c) idle CPU, $RUNS pairs" >&2
for ((i = 0; i < RUNS; i++)); do for w in old new; do
  d=$NEW; [ $w = old ] && d=$OLD
  (cd "$d" && SKIP_TASK=1 IDLE_S=10 BIN=$tmp/${w}bin bash scripts/measure-agent.sh) 2>&1 | grep '^kv' | sed "s/^/$w /" | tee -a "$tmp/idle.txt" >&2 || true
done; done

kv() { grep "^$1 " "$2" | grep -o "$3=[^ ]*" | cut -d= -f2; }
field() { grep "^$1 $4" "$2" | awk -v u="$3" '{for (i = 1; i < NF; i++) if ($(i+1) == u) print $i}'; }
pairs() { paste <(echo "$1") <(echo "$2") | awk 'NF == 2 && $1 > 0 {printf "%.3f\n", $2 / $1}'; }
line() { # label old-values new-values
  printf '%-34s old %10s  new %10s  new/old %s (median of the pairs)\n' "$1" "$(echo "$2" | median)" "$(echo "$3" | median)" "$(pairs "$2" "$3" | median)"
}
echo
echo "== issue 33: hand-written drivers/furnace (old) vs drivers/regmap (new), $RUNS alternating pairs"
for b in Snapshot Status; do
  line "furnace $b/s" "$(field old "$tmp/snap.txt" snap/s "BenchmarkAB$b-")" "$(field new "$tmp/snap.txt" snap/s "BenchmarkAB$b-")"
  line "  allocs per $b" "$(field old "$tmp/snap.txt" allocs/op "BenchmarkAB$b-")" "$(field new "$tmp/snap.txt" allocs/op "BenchmarkAB$b-")"
  line "  bytes per $b" "$(field old "$tmp/snap.txt" B/op "BenchmarkAB$b-")" "$(field new "$tmp/snap.txt" B/op "BenchmarkAB$b-")"
done
for k in heater_off_p99_ms heater_off_p50_ms reaction_p50_ms reaction_p99_ms; do
  line "trip $k" "$(kv old "$tmp/trip.txt" $k)" "$(kv new "$tmp/trip.txt" $k)"
done
for k in cpu_idle_pct cpu_idle_sched_pct writes_per_s rss_idle_kib; do
  line "idle $k" "$(kv old "$tmp/idle.txt" $k)" "$(kv new "$tmp/idle.txt" $k)"
done
sort -g "$tmp/load.txt" | awk 'NR == 1 {lo = $1} {hi = $1} END {print "load (1 min) over the run: " lo "-" hi}'
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
