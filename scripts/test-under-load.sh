#!/usr/bin/env bash
# Runs the whole test suite with the race detector, several times over, while a CPU hog keeps
# every core busy: the proof that no test depends on how fast or how idle the machine is.
#
#   bash scripts/test-under-load.sh            # -race -count=3 ./..., one hog per core
#   COUNT=1 PKGS=./drivers/... bash scripts/test-under-load.sh
#
# Environment:
#   COUNT    go test -count (default 3)
#   PKGS     packages (default ./...)
#   HOGS     busy processes (default: the number of cores)
#   TIMEOUT  go test -timeout (default 60m: -count multiplies the run time, and the hog halves it)
#   HCP_REQUIRE_PEERS=1 (as make ci sets it) turns every peer skip into a failure; without it,
#   tests whose peers are missing skip loudly as under `make test`.
#
# The hogs run at the tests' own priority (a niced hog would yield to them and prove nothing);
# they are killed when the run ends, however it ends. The last line gives the counts.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
PKGS=${PKGS:-./...}
HOGS=${HOGS:-$(nproc)}
TIMEOUT=${TIMEOUT:-60m}
GO=${GO:-go}

hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$HOGS"); do
  ( while :; do :; done ) &
  hogs+=($!)
done
echo "test-under-load: ${#hogs[@]} CPU hogs on $(nproc) cores; go test -race -count=$COUNT $PKGS"

log=$(mktemp -t hcp-under-load.XXXXXX)
start=$(date +%s)
set +e
$GO test -race -count="$COUNT" -timeout "$TIMEOUT" -json $PKGS >"$log"
rc=$?
set -e
stop_hogs
trap - EXIT
secs=$(( $(date +%s) - start ))

# Count test results (top-level and subtests) from the JSON stream; print what failed.
summary=$(python3 - "$log" <<'PY'
import json, sys
counts = {"pass": 0, "fail": 0, "skip": 0}
failed, skipped = [], []
for line in open(sys.argv[1], errors="replace"):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("Test") and ev.get("Action") in counts:
        counts[ev["Action"]] += 1
        if ev["Action"] == "fail":
            failed.append(ev["Package"] + " " + ev["Test"])
        if ev["Action"] == "skip":
            skipped.append(ev["Package"] + " " + ev["Test"])
    elif not ev.get("Test") and ev.get("Action") == "fail":
        failed.append(ev["Package"] + " (package)")
for f in sorted(set(failed)):
    print("FAIL", f)
for s in sorted(set(skipped))[:20]:
    print("skip", s)
print("passed=%d failed=%d skipped=%d" % (counts["pass"], counts["fail"], counts["skip"]))
PY
)
echo "$summary"
if [ "$rc" != 0 ]; then
  echo "test-under-load: the failing tests' output is in $log" >&2
else
  rm -f "$log"
fi
echo "test-under-load: count=$COUNT hogs=${#hogs[@]} ${secs}s exit=$rc $(echo "$summary" | tail -n 1)"
exit "$rc"
