package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/catalog"
)

func TestLatencyBuckets(t *testing.T) {
	prev := time.Duration(0)
	for i := range LatencyBuckets {
		b := LatencyBucketBound(i)
		if b <= prev {
			t.Fatalf("bucket %d bound %v not above %v", i, b, prev)
		}
		if i >= 2 && float64(b) > float64(prev)*1.5+1 {
			t.Fatalf("bucket %d spans [%v, %v): more than half its lower bound", i, prev, b)
		}
		// Every latency just under a bound lands in its bucket, the bound
		// itself in the next.
		if got := latencyBucket(b - time.Microsecond); got != i && i < LatencyBuckets-1 {
			t.Fatalf("latency %v in bucket %d, want %d", b-time.Microsecond, got, i)
		}
		if got := latencyBucket(b); got != min(i+1, LatencyBuckets-1) {
			t.Fatalf("latency %v in bucket %d, want %d", b, got, i+1)
		}
		prev = b
	}
	if got := latencyBucket(time.Hour); got != LatencyBuckets-1 {
		t.Fatalf("an hour in bucket %d", got)
	}
	if got := latencyBucket(-time.Second); got != 0 {
		t.Fatalf("a negative latency in bucket %d", got)
	}
}

// TestLatencyQuantiles: p50 and p99 of known latencies are at or above the
// true quantile and at most a third over it; counting allocates nothing.
func TestLatencyQuantiles(t *testing.T) {
	tests := []struct {
		name     string
		lat      func(i int) time.Duration // i in [1, 1000]
		p50, p99 time.Duration             // exact
	}{
		{"uniform 1..1000 ms", func(i int) time.Duration { return time.Duration(i) * time.Millisecond }, 500 * time.Millisecond, 990 * time.Millisecond},
		{"fast with a slow tail", func(i int) time.Duration {
			if i > 985 {
				return 2 * time.Second
			}
			return 30 * time.Millisecond
		}, 30 * time.Millisecond, 2 * time.Second},
		{"all equal, 45 µs", func(int) time.Duration { return 45 * time.Microsecond }, 45 * time.Microsecond, 45 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h LatencyHistogram
			s := ToolStats{}
			for i := 1; i <= 1000; i++ {
				d := tt.lat(i)
				h.Observe(d)
				s.MaxLatency = max(s.MaxLatency, d)
			}
			s.Latency = h
			for _, q := range []struct {
				name      string
				got, want time.Duration
			}{{"p50", s.P50(), tt.p50}, {"p99", s.P99(), tt.p99}} {
				if q.got < q.want || float64(q.got) > float64(q.want)*4/3 {
					t.Errorf("%s = %v, want within [%v, 4/3 of it]", q.name, q.got, q.want)
				}
			}
			if h.Total() != 1000 {
				t.Fatalf("total %d", h.Total())
			}
		})
	}
	var h LatencyHistogram
	if n := testing.AllocsPerRun(1000, func() { h.Observe(3 * time.Millisecond) }); n != 0 {
		t.Fatalf("Observe allocates %v times", n)
	}
	if (&LatencyHistogram{}).Quantile(0.5) != 0 {
		t.Fatal("quantile of nothing")
	}
}

// TestInvokeStatsLatency: the Invoker measures each call on its clock and
// reports p50 and p99 from its histogram.
func TestInvokeStatsLatency(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	var now time.Time
	calls := 0
	// Each call reads the clock twice (start, end): the n-th call takes n ms.
	f.iv.clock = func() time.Time {
		calls++
		if calls%2 == 1 {
			now = now.Add(time.Second)
			return now
		}
		return now.Add(time.Duration(calls/2) * time.Millisecond)
	}
	ctx := context.Background()
	snap := ref(catalog.ToolSnapshot)
	for range 100 {
		_, _ = f.iv.Invoke(ctx, "ok", snap, nil)
	}
	s := f.iv.Stat(snap)
	if s.Calls != 100 || s.MaxLatency != 100*time.Millisecond {
		t.Fatalf("stats %+v", s)
	}
	if p := s.P50(); p < 50*time.Millisecond || p > 67*time.Millisecond {
		t.Fatalf("p50 = %v, want 50 ms (at most a third over)", p)
	}
	if p := s.P99(); p < 99*time.Millisecond || p > 100*time.Millisecond {
		t.Fatalf("p99 = %v, want 99 ms (at most the max)", p)
	}
	if s.MeanLatency() != 50500*time.Microsecond {
		t.Fatalf("mean %v", s.MeanLatency())
	}
}

// TestInvokeStatsRefusedByRule: every refusal is counted under its rule,
// and the counts sum to Refused; failures and successes are not refusals.
func TestInvokeStatsRefusedByRule(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	ctx := context.Background()
	sp := ref(catalog.ToolSetSetpoint)
	for _, c := range []struct{ token, input string }{
		{"ok", `{"setpoint": 1000.5, "unit": "celsius"}`},  // max
		{"ok", `{"setpoint": 1200, "unit": "celsius"}`},    // max
		{"ok", `{"setpoint": "hot", "unit": "celsius"}`},   // invalid_input
		{"reader", `{"setpoint": 500, "unit": "celsius"}`}, // permission_required
		{"stolen", `{"setpoint": 500, "unit": "celsius"}`}, // unauthorized
		{"ok", `{"setpoint": 500, "unit": "celsius"}`},     // executed
	} {
		_, _ = f.iv.Invoke(ctx, c.token, sp, json.RawMessage(c.input))
	}
	s := f.iv.Stat(sp)
	want := map[Rule]uint64{RuleMax: 2, RuleInvalidInput: 1, RulePermission: 1, RuleUnauthorized: 1}
	if s.Calls != 6 || s.Succeeded != 1 || s.Refused != 5 || s.Failed != 0 || len(s.RefusedBy) != len(want) {
		t.Fatalf("stats %+v", s)
	}
	var sum uint64
	for r, n := range want {
		if s.RefusedBy[r] != n {
			t.Errorf("refused by %s: %d, want %d", r, s.RefusedBy[r], n)
		}
		sum += s.RefusedBy[r]
	}
	if sum != s.Refused {
		t.Fatalf("refusals by rule sum to %d, Refused %d", sum, s.Refused)
	}
	// A latched interlock refuses an unsafe action under its own rule.
	if err := f.il.SafeState(ctx, "test e-stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.iv.Act(ctx, "ok", SetpointAction(device.Celsius(400))); !errors.Is(err, ErrViolation) {
		t.Fatalf("latched: %v", err)
	}
	if s := f.iv.Stat(sp); s.RefusedBy[RuleLatched] != 1 {
		t.Fatalf("stats %+v", s)
	}
	// A snapshot of the Stats is a copy.
	s = f.iv.Stat(sp)
	s.RefusedBy[RuleMax] = 99
	if f.iv.Stat(sp).RefusedBy[RuleMax] != 2 {
		t.Fatal("Stat shares its map with the Invoker")
	}
}

// TestActIsAToolCall: Act performs each kind of action as the call of its
// catalog tool by name and version, with an input that translates back to
// exactly the action; a refusal unwraps to its *Violation through the
// *InvokeError.
func TestActIsAToolCall(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	tests := []struct {
		action Action
		tool   string
	}{
		{SetpointAction(device.Celsius(612.345)), catalog.ToolSetSetpoint},
		{RampRateAction(device.KelvinPerMinute(7.5)), catalog.ToolSetRampRate},
		{HeaterAction(false), catalog.ToolSetHeater},
		{FlowAction("Ar", device.SCCM(123.456)), catalog.ToolSetFlow},
		{SwitchAction("h2s_valve", false), catalog.ToolSetValve},
		{SwitchAction("gate_valve", true), catalog.ToolSetGate},
		{SwitchAction("vent_valve", false), catalog.ToolVent},
		{SwitchAction("pump", true), catalog.ToolSetPump},
		{SwitchAction("scrubber", true), catalog.ToolSetScrubber},
		{AcquireAction(1500 * time.Millisecond), catalog.ToolAcquire},
	}
	for _, tt := range tests {
		t.Run(tt.action.String(), func(t *testing.T) {
			r, in, err := f.iv.ToolFor(tt.action)
			if err != nil || r != ref(tt.tool) {
				t.Fatalf("ToolFor = %v, %v; want %s", r, err, ref(tt.tool))
			}
			tool, err := f.iv.reg.Describe(r.Name, r.Version)
			if err != nil {
				t.Fatal(err)
			}
			if err := tool.ValidateInputJSON(in); err != nil {
				t.Fatalf("input %s: %v", in, err)
			}
			call, err := f.iv.translate(tool, in)
			if err != nil || call.action != tt.action {
				t.Fatalf("input %s translates to %+v (%v), want %+v", in, call.action, err, tt.action)
			}
			before := f.iv.Stat(r).Calls
			if _, err := f.iv.Act(context.Background(), "ok", tt.action); err != nil {
				t.Fatalf("Act: %v", err)
			}
			if f.iv.Stat(r).Calls != before+1 {
				t.Fatal("Act not counted against its tool")
			}
		})
	}
	for _, a := range []Action{SwitchAction("relay", true), SetpointAction(device.Temperature(math.NaN())), AcquireAction(1500 * time.Microsecond)} {
		if _, err := f.iv.Act(context.Background(), "ok", a); err == nil {
			t.Fatalf("%v: no tool should perform it", a)
		} else if ie := (*InvokeError)(nil); !errors.As(err, &ie) || !ie.Refused() {
			t.Fatalf("%v: %v, want a refused *InvokeError", a, err)
		}
		if e := f.audit.last(); e.Decision != DecisionRefused || e.Action == nil || e.Action.Channel() != a.Channel() {
			t.Fatalf("%v: audit %+v, want its refusal", a, e)
		}
	}
	_, err := f.iv.Act(context.Background(), "ok", SetpointAction(device.Celsius(1200)))
	var v *Violation
	var ie *InvokeError
	if !errors.As(err, &ie) || !errors.As(err, &v) || v.Rule != RuleMax || ie.Tool != ref(catalog.ToolSetSetpoint) {
		t.Fatalf("Act above the envelope: %v", err)
	}
}
