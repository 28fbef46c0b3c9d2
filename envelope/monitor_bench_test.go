package envelope

import (
	"context"
	"maps"
	"testing"
	"time"

	"hcp-edge/device"
)

// BenchmarkEvaluateTrips is the cost of one evaluation of the monitor (at
// 20 Hz, plus one per instrument update).
func BenchmarkEvaluateTrips(b *testing.B) {
	env := testEnvelope(b)
	r := safeReadings(t0)
	r.Pressure.Status, r.Pressure.Pressure = device.GaugeOverrange, 1000*device.Millibar
	b.ReportAllocs()
	for b.Loop() {
		if len(env.EvaluateTrips(r)) != 0 {
			b.Fatal("trip")
		}
	}
}

// BenchmarkMargins is the cost of the margins of a status request.
func BenchmarkMargins(b *testing.B) {
	env := testEnvelope(b)
	r := safeReadings(t0)
	b.ReportAllocs()
	for b.Loop() {
		if len(env.Margins(r)) == 0 {
			b.Fatal("no margins")
		}
	}
}

// BenchmarkMonitorEvaluate is the cost of one pass of the monitor's
// evaluator over a healthy cache (no trip): it runs once per poll that
// returns (about 190 times a second at the default rates), so its
// allocations are the idle daemon's garbage.
//
//	go test -run '^$' -bench BenchmarkMonitorEvaluate -benchmem ./envelope/
func BenchmarkMonitorEvaluate(b *testing.B) {
	p := newPlant(t0)
	rig, _ := fakeRig(p)
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	il, err := NewInterlock(testEnvelope(b), rig, tokens{}, &auditLog{}, opts)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewMonitor(il, MonitorOpts{Clock: p.clock})
	if err != nil {
		b.Fatal(err)
	}
	r := safeReadings(t0)
	m.r.Furnace, m.r.Pressure = r.Furnace, r.Pressure
	maps.Copy(m.r.Flows, r.Flows)
	maps.Copy(m.r.Switches, r.Switches)
	maps.Copy(m.r.Inputs, r.Inputs)
	m.startedAt = t0.Add(-time.Hour)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.evaluate(ctx)
	}
	if len(m.trips) != 0 {
		b.Fatalf("tripped: %+v", m.trips)
	}
}
