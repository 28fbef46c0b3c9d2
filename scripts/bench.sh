#!/usr/bin/env bash
# `make bench`: every footprint and speed figure of issue 15 in ONE table, each with its goal,
# its median over RUNS runs and, where there is one, the peer measured in the same run
# (mbpoll/libmodbus for Modbus TCP, bare amqp091-go with confirms for the outbox) and the ratio.
# Not part of `make ci`: it measures, it asserts nothing. docs/FOOTPRINT.md says how to read it.
#
#   scripts/bench.sh                 # RUNS=5
#   RUNS=7 SKIP=outbox scripts/bench.sh   # SKIP: any of size agent modbus outbox (comma-separated)
#
# Needs: Go; mbpoll for the Modbus row; a RabbitMQ from scripts/broker.sh for the outbox rows
# (the Go benchmark skips without one and the row says so). The machine it runs on may be
# shared: absolute figures are noisy, the same-run ratios much less.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SKIP=${SKIP:-}
GO=${GO:-go}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
skip() { [[ ",$SKIP," == *",$1,"* ]]; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
rows=()
row() { rows+=("$(printf '%-44s|%-14s|%-14s|%-14s|%-8s|%s' "$@")"); }

# 1. Size of the armv7 binary, built as `make dist` builds it (deterministic: one build).
if ! skip size; then
  echo "== size: linux/arm GOARM=7 hcp-edge (make dist flags)" >&2
  CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 "$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags '-s -w -X main.version=bench' -o "$tmp/hcp-edge-arm" ./cmd/hcp-edge
  sz=$(stat -c %s "$tmp/hcp-edge-arm")
  row "armv7 binary (bytes)" "<= 12 MB" "$sz" "-" "-" "1 build ($(awk -v s="$sz" 'BEGIN {printf "%.2f MB, %.2f MiB", s/1e6, s/1048576}'))"
fi

# 2. The agent: RSS idle, peak RSS during the MoS2 task, idle CPU (scripts/measure-agent.sh).
if ! skip agent; then
  echo "== agent: scripts/measure-agent.sh x $RUNS (static linux/$("$GO" env GOARCH) build)" >&2
  # Static, stripped, as `make dist` builds linux/amd64 (what ships; `make build` links libc).
  mkdir -p "$tmp/bin"
  CGO_ENABLED=0 "$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags '-s -w -X main.version=bench' -o "$tmp/bin/" ./cmd/...
  for ((i = 0; i < RUNS; i++)); do
    BIN=$tmp/bin bash scripts/measure-agent.sh 2>&1 | tee -a "$tmp/agent.txt" | sed 's/^/   /' >&2
  done
  kv() { awk -v k="$1" '/^kv / {for (i = 2; i <= NF; i++) {split($i, a, "="); if (a[1] == k) print a[2]}}' "$tmp/agent.txt" | median; }
  ri=$(kv rss_idle_kib); rp=$(kv rss_peak_kib); ci=$(kv cpu_idle_pct)
  mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k/1024}'; }
  row "RSS idle (MiB)" "<= 15" "$(mib "$ri")" "-" "-" "median of $RUNS"
  row "RSS peak during the MoS2 task (MiB)" "<= 30" "$(mib "$rp")" "-" "-" "median of $RUNS"
  row "idle CPU (% of one core, 20/10 Hz polls)" "<= 2" "$ci" "-" "-" "median of $RUNS, 10 s each"
fi

# 3. Modbus TCP round trips per second against mbpoll, same rig-sim process.
if ! skip modbus; then
  if command -v mbpoll >/dev/null; then
    echo "== modbus: scripts/bench-modbus.sh (RUNS=$RUNS)" >&2
    RUNS=$RUNS bash scripts/bench-modbus.sh 2>&1 | tee "$tmp/modbus.txt" | sed 's/^/   /' >&2
    ours=$(awk '/ours \(drivers\/modbus Bus/ {print $(NF-4)}' "$tmp/modbus.txt")
    peer=$(awk '/mbpoll .*N=/ && /start-up subtracted/ {print $(NF-4)}' "$tmp/modbus.txt")
    ratio=$(awk '/ratio ours\/mbpoll/ {print $NF}' "$tmp/modbus.txt")
    row "Modbus TCP polls/s vs mbpoll" ">= 1.0x" "$ours" "$peer" "$ratio" "medians of $RUNS"
  else
    row "Modbus TCP polls/s vs mbpoll" ">= 1.0x" "n/a" "n/a" "n/a" "mbpoll not installed"
  fi
fi

# 4. The outbox with publisher confirms against bare amqp091-go with confirms, same run.
if ! skip outbox; then
  echo "== outbox: go test -bench 'BenchmarkOutbox(Tx)?VsBare(Concurrent)?(Pipelined)?$' -count=$RUNS ./transport/amqp/" >&2
  "$GO" test -run '^$' -bench 'BenchmarkOutbox(Tx)?VsBare(Concurrent)?(Pipelined)?$' -benchtime=1x -count="$RUNS" ./transport/amqp/ 2>&1 | tee "$tmp/outbox.txt" | sed 's/^/   /' >&2 || true
  metric() { awk -v b="$1" -v u="$2" '$1 ~ "^"b"-[0-9]+$" {for (i = 2; i < NF; i++) if ($(i+1) == u) print $i}' "$tmp/outbox.txt" | median; }
  # The Tx rows are the agent's own path (AppendTx in each step's transaction): no goal of
  # their own, shown so that a change to the outbox is seen where the agent uses it.
  for b in "BenchmarkOutboxVsBare:1 producer" "BenchmarkOutboxVsBarePipelined:1 producer, pipelined" "BenchmarkOutboxVsBareConcurrent:4 producers" \
    "BenchmarkOutboxVsBareConcurrentPipelined:4 producers, pipelined" \
    "BenchmarkOutboxTxVsBare:agent path, 1 session" "BenchmarkOutboxTxVsBareConcurrent:agent path, 4 sessions"; do
    name=${b%%:*}; who=${b#*:}
    goal=">= 0.5x"; [[ "$who" == "4 producers"* ]] && goal=">= 0.8x"; [[ "$who" == agent* ]] && goal="-"
    if grep -q "^$name-" "$tmp/outbox.txt"; then
      note="medians of $RUNS; commits/event $(metric "$name" commits/event)"
      # The disk's floor, measured in the same runs (transport/amqp/bench_floor_test.go): the
      # most a producer waiting for each message can reach, and the bbolt commit rate behind it.
      ceil=$(metric "$name" ceiling/bare)
      [ "$ceil" != "n/a" ] && note="$note; ceiling ${ceil}x at $(metric "$name" bbolt-commits/s) bbolt commits/s ($(metric "$name" bbolt-commits/s-busy) while the broker persists); one fdatasync per group: ceiling $(metric "$name" ceiling-1sync/bare)x"
      row "outbox events/s vs bare, $who" "$goal" "$(metric "$name" outbox-events/s)" "$(metric "$name" bare-events/s)" "$(metric "$name" outbox/bare)" "$note"
    else
      row "outbox events/s vs bare, $who" "$goal" "n/a" "n/a" "n/a" "no broker (scripts/broker.sh)"
    fi
  done
fi

echo
echo "hcp-edge footprint and speed ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, Go $("$GO" env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-44s|%-14s|%-14s|%-14s|%-8s|%s\n' "figure" "goal" "value" "peer" "ratio" "runs"
printf '%s\n' "--------------------------------------------+--------------+--------------+--------------+--------+------------------"
printf '%s\n' "${rows[@]}"
