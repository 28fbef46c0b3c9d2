#!/usr/bin/env bash
# The fault table of the rig: every fault of configs/rig-protocols.md injected
# into the simulator, observed through the real drivers, cleared, with detection
# and recovery times. Runs drivers/hil TestFaultTable and prints its markdown
# table (fault | target | transport | observed error | detect ms | recover ms).
#
#   scripts/fault-table.sh              # with -race, as in make ci
#   RACE= scripts/fault-table.sh        # without the race detector
#   OUT=docs/fault-table.md scripts/fault-table.sh   # also keep the table
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
RACE=${RACE--race}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

table="$tmp/fault-table.md"
if ! HCP_FAULT_TABLE="$table" "$GO" test $RACE -count=1 -run '^TestFaultTable$' ./drivers/hil/ >"$tmp/test.log" 2>&1; then
	cat "$tmp/test.log"
	[ -s "$table" ] && cat "$table"
	echo "fault-table: TestFaultTable failed" >&2
	exit 1
fi
[ -s "$table" ] || { cat "$tmp/test.log"; echo "fault-table: no table written" >&2; exit 1; }
cat "$table"
if [ -n "${OUT:-}" ]; then
	cp "$table" "$OUT"
	echo
	echo "(written to $OUT)"
fi
