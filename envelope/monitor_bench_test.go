package envelope

import (
	"testing"

	"github.com/hcp-edge/hcp-edge/device"
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
