#!/usr/bin/env bash
# The accuracy table of the analysis tiers and the model router
# (docs/ANALYSIS.md): N simulated spectra (600 by default; firmware-sim's
# spectrum code in-process, with its truth), each analysed by tier 1 alone,
# tier 2 alone, always the best tier (the remote stand-in of modeltest,
# through the production HTTP client) and the router (balance, threshold
# 0.8); beside the MoS2 and WS2 rows, a graphene row: 1000 spectra of
# graphene on copper (HCP_BENCH_GRAPHENE_N) at the shipped recipe's 1 s
# integration, through the same four strategies; then the router's own overhead (median of 2000 analyses with its
# models stubbed, and go test -bench).
#
#   scripts/bench-analysis.sh          # N=600
#   N=1000 scripts/bench-analysis.sh
#
# It fails when routed is less accurate than always-best, or costs more
# than 25 % of its mean cost or time, or loses an analysis, or the router's
# overhead is above 20 µs at the median, or the graphene layer count is
# right on less than 95 % of the graphene spectra (issue 36). Not in make test or ci (about a
# minute on two cores).
set -euo pipefail

cd "$(dirname "$0")/.."
N=${N:-600}
GO=${GO:-go}

HCP_BENCH_ANALYSIS=1 HCP_BENCH_N="$N" $GO test -count=1 -run 'TestAccuracyTable$' -v ./session/modelrouter/ \
	| grep -E '^(\||[0-9]+ (simulated|graphene)|routed /|--- |ok|FAIL|$)|graphene: '
HCP_BENCH_ANALYSIS=1 $GO test -count=1 -run 'TestRouterOverheadP50$' -v ./session/modelrouter/ | grep -E 'overhead:|--- FAIL'
$GO test -count=1 -run '^$' -bench 'RouterOverhead' -benchtime=20000x ./session/modelrouter/ | grep -E '^Benchmark'
$GO test -count=1 -run '^$' -bench 'Analyze' -benchtime=300x ./session/analysis/robust/ | grep -E '^Benchmark'
