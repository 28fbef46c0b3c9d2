package envelope

import (
	"math"
	"slices"
	"strings"
	"time"

	"hcp-edge/device"
)

// Margin is one limited channel's latest value against its hard limits, in
// the envelope's configured unit, with the context that says whether the
// limit applies to the rig as it is now.
type Margin struct {
	Channel  string
	Value    float64
	Min, Max float64
	Unit     string
	// Applies is false where the limit does not bind in the rig's present
	// activity: the over_pressure threshold of an idle chamber (it holds only
	// in process), the ramp-rate limits with the heater off. A margin that
	// does not apply is no violation, whatever its sign.
	Applies bool
	// Context says why, in words for a technician ("idle: over_pressure
	// applies only in process").
	Context string
}

// Activity is what the rig is doing, read from a snapshot the way the trip
// rules read it (EvaluateTrips): the gases in use (flow at or above
// flow_on_threshold, or line valve open) and the heater.
type Activity struct {
	GasesInUse []string
	Heater     bool
}

// InProcess reports a gas in use or the heater enabled: the state in which
// over_pressure applies.
func (a Activity) InProcess() bool { return a.Heater || len(a.GasesInUse) > 0 }

// String is "idle" or "in process (H2, heater)".
func (a Activity) String() string {
	if !a.InProcess() {
		return "idle"
	}
	parts := slices.Clone(a.GasesInUse)
	if a.Heater {
		parts = append(parts, "heater")
	}
	return "in process (" + strings.Join(parts, ", ") + ")"
}

// Activity reads the rig's activity from r (readings older than the comms
// timeout count as not in use, as in EvaluateTrips).
func (e *Envelope) Activity(r Readings) Activity {
	alive := func(at time.Time) bool { return !at.IsZero() && r.At.Sub(at) <= e.commsTimeout }
	var a Activity
	for _, g := range e.spec.Gases {
		f, fok := r.Flows[g.Gas]
		v, vok := r.Switches[g.Valve]
		if (fok && alive(f.At) && device.Finite(float64(f.Flow)) && f.Flow >= e.flowOn) || (vok && alive(v.At) && v.On) {
			a.GasesInUse = append(a.GasesInUse, g.Gas)
		}
	}
	a.Heater = e.heaterOn(r, alive)
	return a
}

// Headroom is the distance from Value to the nearer limit (negative outside).
func (m Margin) Headroom() float64 { return math.Min(m.Max-m.Value, m.Value-m.Min) }
