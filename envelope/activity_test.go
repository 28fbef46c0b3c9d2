package envelope

import (
	"testing"
	"time"

	"hcp-edge/device"
)

// TestMarginContext: an idle chamber at atmosphere has an over_pressure
// margin that does not apply (and no trip); the same pressure in process
// applies and trips. Activity agrees with EvaluateTrips on what "in
// process" is, and the ramp-rate limits apply only with the heater on.
func TestMarginContext(t *testing.T) {
	env := testEnvelope(t)
	tests := []struct {
		name    string
		setup   func(r *Readings)
		process bool
		heater  bool
	}{
		{"idle, vented", func(r *Readings) {}, false, false},
		{"Ar flowing", func(r *Readings) { setFlow(r, "Ar", 100) }, true, false},
		{"H2S valve open", func(r *Readings) { setSwitch(r, "h2s_valve", true) }, true, false},
		{"heater on", func(r *Readings) { r.Furnace.HeaterEnabled = true }, true, true},
		{"Ar below the flow-on threshold", func(r *Readings) { setFlow(r, "Ar", 0.2) }, false, false},
		{"stale valve reading", func(r *Readings) {
			r.Switches["h2_valve"] = Level{On: true, At: r.At.Add(-time.Minute)}
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := safeReadings(t0)
			r.Pressure.Pressure, r.Pressure.Status = 1013*device.Millibar, device.GaugeOverrange
			r.Furnace.RampRate = 0
			tt.setup(&r)
			if got := env.Activity(r).InProcess(); got != tt.process {
				t.Fatalf("InProcess %v, want %v (%v)", got, tt.process, env.Activity(r))
			}
			tripped := false
			for _, ev := range env.EvaluateTrips(r) {
				tripped = tripped || ev.Trip == TripOverPressure
			}
			if tripped != tt.process {
				t.Fatalf("over_pressure tripped %v, in process %v: the dashboard would disagree with the monitor", tripped, tt.process)
			}
			seen := 0
			for _, m := range env.Margins(r) {
				switch m.Channel {
				case ChannelPressure:
					seen++
					if m.Applies != tt.process || m.Context == "" || m.Headroom() >= 0 {
						t.Fatalf("pressure margin %+v, want applies=%v, negative headroom, a context", m, tt.process)
					}
				case ChannelRampRate:
					seen++
					if m.Applies != tt.heater || (!m.Applies && m.Context == "") {
						t.Fatalf("ramp rate margin %+v, want applies=%v", m, tt.heater)
					}
				case ChannelTemperature:
					if !m.Applies {
						t.Fatalf("over_temperature must always apply: %+v", m)
					}
				}
			}
			if seen != 2 {
				t.Fatalf("pressure and ramp-rate margins missing: %+v", env.Margins(r))
			}
		})
	}
}
