package envelope

import (
	"errors"
	"math/bits"
	"time"
)

// LatencyBuckets is the number of buckets of a LatencyHistogram.
const LatencyBuckets = 56

// LatencyHistogram counts latencies in LatencyBuckets fixed buckets, two per
// power of two of microseconds (each bucket's upper bound is at most a third
// above its lower one), from under 1 µs to about 200 s; longer latencies
// fall into the last bucket. It is a value of fixed size: counting
// allocates nothing, which matters on the Raspberry Pi the agent runs on.
type LatencyHistogram struct {
	Counts [LatencyBuckets]uint64
}

// latencyBucket returns the bucket of d. Bucket 0 holds [0, 1) µs and
// bucket 1 holds [1, 2) µs; for l ≥ 2, bucket 2(l-1) holds
// [2^(l-1), 1.5·2^(l-1)) µs and bucket 2(l-1)+1 holds [1.5·2^(l-1), 2^l) µs.
func latencyBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us == 0 {
		return 0
	}
	l := bits.Len64(us) // us in [2^(l-1), 2^l)
	if l == 1 {
		return 1
	}
	i := 2*(l-1) + int(us>>(l-2)&1)
	return min(i, LatencyBuckets-1)
}

// LatencyBucketBound is the exclusive upper bound of bucket i.
func LatencyBucketBound(i int) time.Duration {
	switch {
	case i <= 0:
		return time.Microsecond
	case i == 1:
		return 2 * time.Microsecond
	}
	k := uint(i/2 + 1) // i = 2(k-1) or 2(k-1)+1
	base := uint64(1) << (k - 1)
	if i%2 == 0 {
		return time.Duration(base+base/2) * time.Microsecond
	}
	return time.Duration(base<<1) * time.Microsecond
}

// Observe counts one latency.
func (h *LatencyHistogram) Observe(d time.Duration) { h.Counts[latencyBucket(d)]++ }

// Total is the number of latencies counted.
func (h *LatencyHistogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q ≤ 1) of the counted latencies: an over-estimate by at most a third
// (a half in the first buckets). 0 without counts.
func (h *LatencyHistogram) Quantile(q float64) time.Duration {
	n := h.Total()
	if n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(q*float64(n) + 0.5) // the rank-th smallest, 1-based
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			return LatencyBucketBound(i)
		}
	}
	return LatencyBucketBound(LatencyBuckets - 1)
}

// Rules of refusals that carry no Violation, for ToolStats.RefusedBy.
const (
	RuleUnauthorized Rule = "unauthorized" // the token is not authentic, expired, revoked or lacks the scope
	RuleUnknownTool  Rule = "unknown_tool" // no such tool or version, or no translation of it
)

// freshWait is how long the action of o waited for a fresh reading.
func (o *outcome) freshWait() time.Duration {
	var v *Violation
	if o.err != nil && errors.As(o.err, &v) {
		return v.Waited
	}
	var ended *FreshWaitEnded
	if o.err != nil && errors.As(o.err, &ended) {
		return ended.Waited
	}
	return o.res.Waited
}

// refusalRule names the rule of a refusal by the interlock for the
// statistics: a Violation's rule, or unauthorized.
func refusalRule(err error) Rule {
	var v *Violation
	if errors.As(err, &v) {
		return v.Rule
	}
	if errors.Is(err, ErrRateLimited) {
		return RuleRateLimit
	}
	return RuleUnauthorized
}

// ToolStats are the counters of one tool since the Invoker was built.
type ToolStats struct {
	Tool      ToolRef
	Calls     uint64 // every invocation that found the tool
	Succeeded uint64 // executed and produced a valid output
	Refused   uint64 // refused by a rule: permission, rate limit, input, envelope, latch
	Failed    uint64 // failed while executing: instrument error, timeout, read-back, output
	// RefusedBy counts the refusals by rule: an envelope Violation's rule
	// (max, stale_reading, latched, ...), permission_required, unauthorized,
	// rate_limit, invalid_input or unknown_tool. Its values sum to Refused.
	RefusedBy map[Rule]uint64
	// TowardSafe counts the calls that moved an output toward its safe
	// state: they are never refused for want of scope or for rate.
	TowardSafe uint64
	// FreshWaits counts the calls whose action waited for a fresh reading
	// before the interlock judged it (late is not stale), whatever the
	// outcome; MaxFreshWait is the longest such wait.
	FreshWaits   uint64
	MaxFreshWait time.Duration
	TotalLatency time.Duration // summed over every call
	MaxLatency   time.Duration
	Latency      LatencyHistogram // every call's latency
}

// MeanLatency is the mean latency per call (0 without calls).
func (s ToolStats) MeanLatency() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.TotalLatency / time.Duration(s.Calls)
}

// P50 is the median latency, as LatencyHistogram.Quantile estimates it, never
// above MaxLatency.
func (s ToolStats) P50() time.Duration { return min(s.Latency.Quantile(0.5), s.MaxLatency) }

// P99 is the 99th percentile latency, as LatencyHistogram.Quantile estimates
// it, never above MaxLatency.
func (s ToolStats) P99() time.Duration { return min(s.Latency.Quantile(0.99), s.MaxLatency) }
