#!/usr/bin/env bash
# make ci's steps, each a `make STEP` of its own, in order, timed: the table at the end says
# where the minutes of a CI run went (issue 40: at most 20 minutes on a fresh machine, apt
# included). Stops at the first step that fails, naming it.
#
#   make ci                    # the whole of it (.ci/run calls it)
#   CI_STEPS="lint ci-suite" bash scripts/ci.sh   # some steps alone, timed the same way
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
# make ci's pi-sim takes 5 trips and 5 e-stops instead of 15: every capability and every
# verdict is the same, the p99s it prints (which assert nothing) rest on fewer samples; make
# pi-sim alone keeps 15.
export HCP_PI_SIM_N=${HCP_PI_SIM_N:-5}
# and only its quota pass (the armv7 agent under qemu in a CPU quota, ~10x slower than native,
# nearest a Pi 3): the suite runs the native agent, and what completes at a tenth of the speed
# completes at a third (plain qemu). make pi-sim keeps the three passes and their table.
export HCP_PI_SIM_PASSES=${HCP_PI_SIM_PASSES:-quota}
read -r -a steps <<<"${CI_STEPS:-ci-deps broker cluster tidy-check layers lint build verify-dist pi-sim demo demo-graphene demo-two-zone commission demo-broker ci-timed ci-suite test-bare}"
start=$(date +%s)
done_steps=()
report() {
	echo
	echo "make ci: time per step (s; $(nproc) cores, load average now $(cut -d' ' -f1-3 /proc/loadavg))"
	for d in "${done_steps[@]}"; do printf '   %-14s %5s\n' "${d% *}" "${d##* }"; done
	printf '   %-14s %5s\n' total "$(($(date +%s) - start))"
}
for s in "${steps[@]}"; do
	t0=$(date +%s)
	echo "== make ci: $s ($(date -u +%H:%M:%S))"
	if ! "$MAKE" --no-print-directory "$s"; then
		done_steps+=("$s(FAILED) $(($(date +%s) - t0))")
		report
		echo "make ci: step $s FAILED"
		exit 1
	fi
	done_steps+=("$s $(($(date +%s) - t0))")
done
report
echo "make ci: all checks passed"
