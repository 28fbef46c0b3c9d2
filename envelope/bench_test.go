package envelope

import (
	"context"
	"testing"
	"time"

	"hcp-edge/device"
)

// benchActions are representative actions: a plain limit, the heater
// interlock, a toxic gas with every interlock and the mixing rule, the venting
// rules, and a refusal (whose Violation is built and formatted lazily).
var benchActions = []struct {
	name   string
	action Action
	ok     bool
}{
	{"setpoint", SetpointAction(device.Celsius(700)), true},
	{"heater_on", HeaterAction(true), true},
	{"h2s_flow", FlowAction("H2S", 5), true},
	{"vent_valve", SwitchAction("vent_valve", true), true},
	{"scrubber_off", SwitchAction("scrubber", false), true},
	{"refused_setpoint", SetpointAction(device.Celsius(1100)), false},
	{"safe_heater_off", HeaterAction(false), true},
}

// BenchmarkCheck measures the interlock's decision alone: Envelope.Check of
// one action against a snapshot and a history (no I/O).
//
//	go test -run '^$' -bench BenchmarkCheck -benchmem ./envelope/
func BenchmarkCheck(b *testing.B) {
	env := testEnvelope(b)
	r := safeReadings(t0)
	s := NewState()
	env.Accept(s, FlowAction("H2S", 5), t0.Add(-time.Hour))
	for _, bc := range benchActions {
		b.Run(bc.name, func(b *testing.B) {
			if err := env.Check(bc.action, r, s); (err == nil) != bc.ok {
				b.Fatalf("check %v: %v", bc.action, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = env.Check(bc.action, r, s)
			}
		})
	}
}

// BenchmarkApplyFakes measures Apply end to end with in-memory instruments:
// authorisation, a snapshot of every instrument (one goroutine each), the
// check, two audit records, the write and the read-back.
//
//	go test -run '^$' -bench BenchmarkApplyFakes -benchmem ./envelope/
func BenchmarkApplyFakes(b *testing.B) {
	for _, bc := range benchActions {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				f.audit.mu.Lock()
				f.audit.entries = f.audit.entries[:0]
				f.audit.mu.Unlock()
				f.p.mu.Lock()
				f.p.writes = f.p.writes[:0]
				f.p.mu.Unlock()
				f.p.advance(time.Minute) // no rate of change binds
				_, err := f.il.apply(ctx, "ok", bc.action)
				if (err == nil) != bc.ok {
					b.Fatalf("apply %v: %v", bc.action, err)
				}
			}
		})
	}
}

// BenchmarkActFakes measures the same actions through the tool pipeline
// (Invoker.Act: ToolFor, the input schema, the permission, the rate limit,
// the interlock's apply as in BenchmarkApplyFakes, the output schema and
// the statistics): the difference is the pipeline's cost per action.
//
//	go test -run '^$' -bench 'BenchmarkApplyFakes|BenchmarkActFakes' -benchmem ./envelope/
func BenchmarkActFakes(b *testing.B) {
	for _, bc := range benchActions {
		b.Run(bc.name, func(b *testing.B) {
			f := newInvokeFixture(b, nil, nil)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				f.audit.mu.Lock()
				f.audit.entries = f.audit.entries[:0]
				f.audit.mu.Unlock()
				f.p.mu.Lock()
				f.p.writes = f.p.writes[:0]
				f.p.mu.Unlock()
				f.p.advance(time.Minute) // no rate of change binds, and no rate limit
				_, err := f.iv.Act(ctx, "ok", bc.action)
				if (err == nil) != bc.ok {
					b.Fatalf("act %v: %v", bc.action, err)
				}
			}
		})
	}
}

// BenchmarkToolStatsCount measures the statistics of one call (no
// allocation once the tool has been counted).
//
//	go test -run '^$' -bench BenchmarkToolStatsCount -benchmem ./envelope/
func BenchmarkToolStatsCount(b *testing.B) {
	f := newInvokeFixture(b, nil, nil)
	ref := ToolRef{Name: "furnace.set_setpoint", Version: "1.0.0"}
	o := &outcome{}
	start := f.p.clock()
	f.iv.count(ref, start, o)
	b.ReportAllocs()
	for b.Loop() {
		f.iv.count(ref, start, o)
	}
}
