#!/usr/bin/env bash
# `make bench`: every footprint and speed figure of issues 15 and 25 in ONE table, each with its
# goal, its median over RUNS runs and, where there is one, the peer measured in the same run
# (a C poller at the agent's reads per second for the idle CPU, mbpoll/libmodbus for Modbus TCP,
# bare amqp091-go with confirms for the outbox) and the ratio. The load-sensitive rows carry
# the load average (/proc/loadavg, 1 min) seen while they were measured.
# Not part of `make ci`: it measures, it asserts nothing. docs/FOOTPRINT.md says how to read it.
#
#   scripts/bench.sh                 # RUNS=5
#   RUNS=7 SKIP=outbox scripts/bench.sh   # SKIP: any of size agent idle trip estop modbus outbox
#   RUNS=1 SKIP=size,agent,modbus,outbox scripts/bench.sh   # the issue 25 groups alone
#
# Groups: size (armv7 binary), agent (RSS idle and peak, idle CPU: scripts/measure-agent.sh),
# idle (the agent's idle CPU against scripts/wake-cost/c/poll.c doing the agent's reads per
# second), trip (envelope/hil TestTripLatency), estop (cmd/hcp-edge TestEStopLatency and, on
# the two-zone rig with its RS-485 line at 19200 baud emulated, TestTwoZoneEStopLatency; ESTOP_N
# e-stops each way, default 20), modbus (scripts/bench-modbus.sh: round trips, and the generic
# driver's furnace snapshot and status on hcp-sim-tc and eurotherm-3200, each under every CPU
# placement of its PLACE: same, cross, free), outbox (transport/amqp).
#
# Needs: Go; cc for the C poller; mbpoll for the Modbus row; a RabbitMQ from scripts/broker.sh
# for the outbox rows (the Go benchmark skips without one and the row says so). The machine it
# runs on may be shared: absolute figures are noisy, the same-run ratios much less.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SKIP=${SKIP:-}
GO=${GO:-go}
CC=${CC:-cc}
IDLE_S=${IDLE_S:-10}
ESTOP_N=${ESTOP_N:-20}
tmp=$(mktemp -d)
load_pid=""; sim_pid=""
cleanup() {
  for pid in $load_pid $sim_pid; do stop "$pid"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
stop() { if kill "$1" 2>/dev/null; then wait "$1" 2>/dev/null || true; fi; }
skip() { [[ ",$SKIP," == *",$1,"* ]]; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# The rows, each with a key that orders the table (the groups do not run in table order: the
# idle CPU row shows the trip p99 beside it).
rows=()
row() { local k=$1; shift; rows+=("$k	$(printf '%-44s|%-14s|%-14s|%-14s|%-8s|%s' "$@")"); }
# kvget FILE KEY [SEL=VAL]: KEY of every `kv k=v ...` line in FILE (with SEL=VAL), one a line.
# The measurements print such lines (measure-agent.sh; the latency tests' -v logs).
kvget() {
  awk -v k="$2" -v sel="${3:-}" '{
    for (i = 1; i <= NF && $i != "kv"; i++) {}
    if (i > NF) next
    split("", v); ok = (sel == "")
    for (j = i + 1; j <= NF; j++) { n = index($j, "="); if (n) v[substr($j, 1, n - 1)] = substr($j, n + 1); if ($j == sel) ok = 1 }
    if (ok && (k in v)) print v[k]
  }' "$1"
}
# The load average while a row is measured: sampled every 2 s by load_start/load_stop, or
# given; range_load prints "load LO-HI", with ", quiet" only when every sample is below 1.
load_start() { (while :; do cut -d' ' -f1 /proc/loadavg; sleep 2; done) >>"$tmp/load.$1" & load_pid=$!; }
load_stop() { stop "$load_pid"; load_pid=""; }
range_load() {
  sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {
    if (NR == 0) {print "load n/a"; exit}
    s = (lo == hi) ? "load " lo : "load " lo "-" hi; if (hi < 1) s = s ", quiet"; print s }'
}
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
# cpu_ns PID: CPU ns of all its threads (as scripts/wake-cost/run.sh and measure-agent.sh).
cpu_ns() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{s += $1} END {printf "%d", s}'; }
# runs_note FILE KEY [SEL]: "k of RUNS runs gave no figure" when some run failed.
runs_note() { local k; k=$(kvget "$@" | wc -l); [ "$k" -eq "$RUNS" ] || echo "; $((RUNS - k)) of $RUNS runs gave no figure (log above)"; }

# 1. Size of the armv7 binary, built as `make dist` builds it (deterministic: one build).
if ! skip size; then
  echo "== size: linux/arm GOARM=7 hcp-edge (make dist flags)" >&2
  # shellcheck disable=SC2046 # the gcflags are several words
  CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 "$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags '-s -w -R 0x1000 -X main.version=bench' -o "$tmp/hcp-edge-arm" ./cmd/hcp-edge
  sz=$(stat -c %s "$tmp/hcp-edge-arm")
  row 1 "armv7 binary (bytes)" "<= 12 MB" "$sz" "-" "-" "1 build ($(awk -v s="$sz" 'BEGIN {printf "%.2f MB, %.2f MiB", s/1e6, s/1048576}'))"
fi

# 2. The trip: TestTripLatency (envelope/hil, 50 thermal-runaway trips a run at the default
# poll rates), RUNS runs; the median of the per-run p99s of the heater-off latency (onset to
# the heater-off write) and of the agent's reaction (its first reading over the limit to that
# write). Run before the idle CPU so that its row can show the trip p99 beside it.
trip_p99=""
if ! skip trip; then
  echo "== trip: HCP_TRIP_LATENCY=1 TestTripLatency x $RUNS (envelope/hil, 50 trips each)" >&2
  "$GO" test -c -o "$tmp/hil.test" ./envelope/hil/
  load_start trip
  for ((i = 0; i < RUNS; i++)); do
    (cd envelope/hil && HCP_TRIP_LATENCY=1 "$tmp/hil.test" -test.run '^TestTripLatency$' -test.v -test.count=1) 2>&1 |
      tee -a "$tmp/trip.txt" | sed 's/^/   /' >&2 || true
  done
  load_stop
  trip_p99=$(kvget "$tmp/trip.txt" heater_off_p99_ms | median)
  rp99=$(kvget "$tmp/trip.txt" reaction_p99_ms | median)
  ld=$(range_load <"$tmp/load.trip"); fail=$(runs_note "$tmp/trip.txt" heater_off_p99_ms)
  row 4 "trip heater-off p99 (ms)" "<= 50" "$trip_p99" "-" "-" \
    "median of $RUNS per-run p99s (50 trips each; onset -> heater-off write); p50 $(kvget "$tmp/trip.txt" heater_off_p50_ms | median) ms; $ld$fail"
  row 4 "trip reaction p99 (ms)" "<= 5" "$rp99" "-" "-" \
    "median of $RUNS per-run p99s (the monitor's reading over the limit -> heater-off write); p50 $(kvget "$tmp/trip.txt" reaction_p50_ms | median) ms; $ld$fail"
fi

# 3. The e-stop: TestEStopLatency (cmd/hcp-edge; CLI start to every output read back safe),
# ESTOP_N e-stops each way a run, through the daemon and with the daemon hung (SIGSTOP).
if ! skip estop; then
  echo "== estop: HCP_ESTOP_LATENCY=$ESTOP_N TestEStopLatency and TestTwoZoneEStopLatency x $RUNS (cmd/hcp-edge)" >&2
  "$GO" test -c -o "$tmp/cmd.test" ./cmd/hcp-edge/
  # The binary under test built as `make build` builds it (the flags change its start-up, which
  # the e-stop's time includes), not TestMain's plain `go build`.
  "$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags '-s -w -X main.version=bench' -o "$tmp/hcp-edge" ./cmd/hcp-edge
  load_start estop
  for ((i = 0; i < RUNS; i++)); do
    (cd cmd/hcp-edge && HCP_EDGE_BIN="$tmp/hcp-edge" HCP_ESTOP_LATENCY=$ESTOP_N "$tmp/cmd.test" -test.run '^(TestEStopLatency|TestTwoZoneEStopLatency)$' -test.v -test.count=1) 2>&1 |
      tee -a "$tmp/estop.txt" | sed 's/^/   /' >&2 || true
  done
  load_stop
  ld=$(range_load <"$tmp/load.estop")
  for w in "daemon:daemon alive:25" "daemon-hung:daemon hung (SIGSTOP):300" "two-zone:two zones, one RS-485 line:25"; do
    way=${w%%:*}; rest=${w#*:}; who=${rest%%:*}; goal=${rest#*:}
    row 5 "e-stop p99, $who (ms)" "<= $goal" "$(kvget "$tmp/estop.txt" p99_ms "way=$way" | median)" "-" "-" \
      "median of $RUNS per-run p99s (n=$ESTOP_N each; CLI start -> outputs read back safe); p50 $(kvget "$tmp/estop.txt" p50_ms "way=$way" | median) ms; $ld$(runs_note "$tmp/estop.txt" p99_ms "way=$way")"
  done
fi

# 4. The agent: RSS idle, peak RSS during the MoS2 task, idle CPU (scripts/measure-agent.sh);
# and, after each of its runs, the C poller (scripts/wake-cost/c/poll.c: one thread, blocking
# socket, reads evenly spaced) doing as many Modbus TCP reads a second as the agent made
# write(2) calls a second in its idle window (/proc/PID/io syscw: one per exchange with the
# rig), against a rig-sim of its own, its CPU measured the same way over the same length.
if ! skip agent || ! skip idle; then
  echo "== agent: scripts/measure-agent.sh x $RUNS (static linux/$("$GO" env GOARCH) build)$(skip idle || echo ', each followed by the C poller')" >&2
  # Static, stripped, as `make dist` builds linux/amd64 (what ships; `make build` links libc).
  mkdir -p "$tmp/bin"
  # shellcheck disable=SC2046 # the gcflags are several words
  CGO_ENABLED=0 "$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags '-s -w -X main.version=bench' -o "$tmp/bin/" ./cmd/...
  have_c=""
  if ! skip idle; then
    if ! command -v "$CC" >/dev/null; then have_c="$CC not installed"
    elif ! "$CC" -O2 -o "$tmp/pollc" scripts/wake-cost/c/poll.c >"$tmp/cc.log" 2>&1; then have_c="$CC failed: $(head -n 1 "$tmp/cc.log")"
    fi
  fi
  for ((i = 0; i < RUNS; i++)); do
    st=0; skip agent && st=1
    SKIP_TASK=$st IDLE_S=$IDLE_S BIN=$tmp/bin bash scripts/measure-agent.sh >"$tmp/agent.run" 2>&1 || true
    sed 's/^/   /' "$tmp/agent.run" >&2; cat "$tmp/agent.run" >>"$tmp/agent.txt"
    rate=$(kvget "$tmp/agent.run" writes_per_s | awk '{printf "%.0f", $1}')
    if ! skip idle && [ -z "$have_c" ] && [ -n "$rate" ] && [ "$rate" -gt 0 ]; then
      mkdir -p "$tmp/cs"; port=$(free_port)
      HCP_RIG_SIM_DIR=$tmp/cs "$tmp/bin/rig-sim" run --dir "$tmp/cs" --modbus-addr "127.0.0.1:$port" >"$tmp/cs.log" 2>&1 & sim_pid=$!
      for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
      sleep 1
      "$tmp/pollc" "$port" "$rate" $((IDLE_S + 5)) >/dev/null 2>"$tmp/pollc.log" & cp=$!
      sleep 3
      cl=$(cut -d' ' -f1 /proc/loadavg); n0=$(cpu_ns "$cp"); t0=$(date +%s%N)
      sleep "$IDLE_S"
      n1=$(cpu_ns "$cp"); t1=$(date +%s%N)
      if wait "$cp"; then
        cpct=$(awk -v n=$((n1 - n0)) -v d=$((t1 - t0)) 'BEGIN {printf "%.2f", 100 * n / d}')
        apct=$(kvget "$tmp/agent.run" cpu_idle_sched_pct)
        echo "   C poller (c/poll.c) at $rate reads/s: $cpct % of one core over $IDLE_S s; load $cl" >&2
        echo "kv c_pct=$cpct c_rate=$rate ratio=$(awk -v a="$apct" -v c="$cpct" 'BEGIN {printf "%.2f", a / c}') load1=$cl" >>"$tmp/agent.txt"
      else
        echo "   C poller failed: $(head -n 1 "$tmp/pollc.log")" >&2
      fi
      stop "$sim_pid"; sim_pid=""
    fi
  done
  ld=$(kvget "$tmp/agent.txt" load1 | range_load)
  if ! skip agent; then
    mib() { awk -v k="$1" 'BEGIN {if (k == "n/a") print k; else printf "%.1f", k/1024}'; }
    row 2 "RSS idle (MiB)" "<= 15" "$(mib "$(kvget "$tmp/agent.txt" rss_idle_kib | median)")" "-" "-" "median of $RUNS"
    row 2 "RSS peak during the MoS2 task (MiB)" "<= 30" "$(mib "$(kvget "$tmp/agent.txt" rss_peak_kib | median)")" "-" "-" "median of $RUNS"
    row 2 "idle CPU (% of one core, 20/10 Hz polls)" "<= 2" "$(kvget "$tmp/agent.txt" cpu_idle_pct | median)" "-" "-" "median of $RUNS, $IDLE_S s each (/proc/PID/stat ticks); $ld"
  fi
  if ! skip idle; then
    tp="trip heater-off p99 ${trip_p99:-n/a (SKIP=trip)}${trip_p99:+ ms}"
    if [ -n "$have_c" ]; then
      row 3 "idle CPU vs C poller, same reads/s (%)" "<= 1.5x" "$(kvget "$tmp/agent.txt" cpu_idle_sched_pct | median)" "n/a" "n/a" "C poller: $have_c; $tp; $ld"
    else
      row 3 "idle CPU vs C poller, same reads/s (%)" "<= 1.5x" "$(kvget "$tmp/agent.txt" cpu_idle_sched_pct | median)" "$(kvget "$tmp/agent.txt" c_pct | median)" "$(kvget "$tmp/agent.txt" ratio | median)" \
        "medians of $RUNS, ratio of each run's pair; $IDLE_S s, all threads' schedstat; C at the agent's counted write(2)s/s ($(kvget "$tmp/agent.txt" c_rate | median)/s, /proc/PID/io syscw); $tp; $ld$(runs_note "$tmp/agent.txt" c_pct)"
    fi
  fi
fi

# 5. Modbus TCP round trips per second against mbpoll, same rig-sim process.
if ! skip modbus; then
  if command -v mbpoll >/dev/null; then
    echo "== modbus: scripts/bench-modbus.sh (RUNS=$RUNS)" >&2
    load_start modbus
    RUNS=$RUNS bash scripts/bench-modbus.sh 2>&1 | tee "$tmp/modbus.txt" | sed 's/^/   /' >&2
    load_stop
    # One group of rows per CPU placement (bench-modbus.sh's PLACE: same, cross, free), each
    # read from its own results block.
    # spread FILE PATTERN: the min..max of the round ratios, on the line after the ratio's.
    spread() { awk -v pat="$2" 'index($0, pat) {getline; print $NF}' "$1"; }
    # cpu FILE PATTERN: the CPU times a read of both clients, two lines after the ratio's.
    cpu() { awk -v pat="$2" 'index($0, pat) {getline; getline; sub(/.*medians +/, ""); print}' "$1"; }
    snap() { awk -v pat="$2" 'index($0, pat) {for (i = 1; i < NF; i++) if ($(i+1) == "snap/s") print $i}' "$1"; }
    for pl in $(sed -n 's/^== placement \([a-z]*\) results.*/\1/p' "$tmp/modbus.txt"); do
      f=$tmp/modbus.$pl.txt
      awk -v pl="$pl" '/^== placement / {on = ($3 == pl && $4 == "results")} on' "$tmp/modbus.txt" >"$f"
      what=$(sed -n 's/^== placement [a-z]* results (\(.*\))$/\1/p' "$f")
      ours=$(awk '/ours \(drivers\/modbus Bus/ {print $(NF-4)}' "$f")
      peer=$(awk '/mbpoll .*N=/ && /start-up subtracted/ {print $(NF-4)}' "$f")
      ratio=$(awk '/ratio ours\/mbpoll/ {print $NF}' "$f")
      row 6 "Modbus TCP polls/s vs mbpoll [$pl]" ">= 1.0x" "$ours" "$peer" "$ratio" "$what; medians of $RUNS interleaved rounds (ours, then mbpoll); ratio: median of the rounds' ratios, $(spread "$f" "ratio ours/mbpoll"); CPU a read: $(cpu "$f" "ratio ours/mbpoll"); $(range_load <"$tmp/load.modbus")"
      # The generic driver reading the furnace (regmap.Controller.Snapshot: every channel; Status:
      # the monitor's 20 Hz poll) against mbpoll reading the same spans: the simulator's
      # controller and the Eurotherm 3200 map.
      for id in "hcp-sim-tc snapshot" "hcp-sim-tc status" "eurotherm-3200 snapshot" "eurotherm-3200 status"; do
        n=$(sed -n "s/.*furnace $id (\([0-9]*\) reads.*/\1/p" "$f")
        row 6 "furnace $id/s vs mbpoll [$pl]" ">= 1.0x" "$(snap "$f" "   $id (regmap")" "$(snap "$f" "mbpoll same spans $id")" \
          "$(awk -v pat="ratio $id ours/mbpoll" 'index($0, pat) {print $NF}' "$f")" \
          "$what; medians of $RUNS interleaved rounds; ratio: median of the rounds' ratios, $(spread "$f" "ratio $id ours/mbpoll"); ${n:-?} reads each; mbpoll: 1 / sum of its per-span times; CPU a reading: $(cpu "$f" "ratio $id ours/mbpoll")"
      done
    done
  else
    row 6 "Modbus TCP polls/s vs mbpoll" ">= 1.0x" "n/a" "n/a" "n/a" "mbpoll not installed"
  fi
fi

# 7. The outbox with publisher confirms against bare amqp091-go with confirms, same run.
if ! skip outbox; then
  echo "== outbox: go test -bench 'BenchmarkOutbox(Tx)?VsBare(Concurrent)?(Pipelined)?$' -count=$RUNS ./transport/amqp/" >&2
  load_start outbox
  "$GO" test -run '^$' -bench 'BenchmarkOutbox(Tx)?VsBare(Concurrent)?(Pipelined)?$' -benchtime=1x -count="$RUNS" ./transport/amqp/ 2>&1 | tee "$tmp/outbox.txt" | sed 's/^/   /' >&2 || true
  load_stop
  ld=$(range_load <"$tmp/load.outbox")
  metric() { awk -v b="$1" -v u="$2" '$1 ~ "^"b"-[0-9]+$" {for (i = 2; i < NF; i++) if ($(i+1) == u) print $i}' "$tmp/outbox.txt" | median; }
  # The Tx rows are the agent's own path (AppendTx in each step's transaction): no goal of
  # their own, shown so that a change to the outbox is seen where the agent uses it.
  for b in "BenchmarkOutboxVsBare:1 producer" "BenchmarkOutboxVsBarePipelined:1 producer, pipelined" "BenchmarkOutboxVsBareConcurrent:4 producers" \
    "BenchmarkOutboxVsBareConcurrentPipelined:4 producers, pipelined" \
    "BenchmarkOutboxTxVsBare:agent path, 1 session" "BenchmarkOutboxTxVsBareConcurrent:agent path, 4 sessions"; do
    name=${b%%:*}; who=${b#*:}
    goal=">= 0.5x"; [[ "$who" == "4 producers"* ]] && goal=">= 0.8x"; [[ "$who" == agent* ]] && goal="-"
    if grep -q "^$name-" "$tmp/outbox.txt"; then
      note="medians of $RUNS; $ld; commits/event $(metric "$name" commits/event)"
      # The disk's floor, measured in the same runs (transport/amqp/bench_floor_test.go): the
      # most a producer waiting for each message can reach, and the bbolt commit rate behind it.
      ceil=$(metric "$name" ceiling/bare)
      [ "$ceil" != "n/a" ] && note="$note; ceiling ${ceil}x at $(metric "$name" bbolt-commits/s) bbolt commits/s ($(metric "$name" bbolt-commits/s-busy) while the broker persists); one fdatasync per group: ceiling $(metric "$name" ceiling-1sync/bare)x"
      row 7 "outbox events/s vs bare, $who" "$goal" "$(metric "$name" outbox-events/s)" "$(metric "$name" bare-events/s)" "$(metric "$name" outbox/bare)" "$note"
    else
      row 7 "outbox events/s vs bare, $who" "$goal" "n/a" "n/a" "n/a" "no broker (scripts/broker.sh)"
    fi
  done
fi

echo
echo "hcp-edge footprint and speed ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, Go $("$GO" env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-44s|%-14s|%-14s|%-14s|%-8s|%s\n' "figure" "goal" "value" "peer" "ratio" "runs"
printf '%s\n' "--------------------------------------------+--------------+--------------+--------------+--------+------------------"
printf '%s\n' "${rows[@]}" | sort -s -t "$(printf '\t')" -k1,1 | cut -f2-
