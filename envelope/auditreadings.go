package envelope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Version identifies the envelope in the audit record: "sha256:" and the
// first 16 hex digits of the SHA-256 of its configuration and rig spec as
// JSON (keys sorted), so that two agents enforcing the same limits on the
// same rig name the same version, and any change to a limit, a rule, a
// procedure or the rig's layout names another. Every entry the interlock
// records carries it (Entry.Envelope).
func (e *Envelope) Version() string { return e.version }

func version(cfg Config, spec RigSpec) string {
	b, err := json.Marshal(struct {
		Config Config
		Spec   RigSpec
	}{cfg, spec})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// readings is the violation's reading: the value the rule compared with
// its limit, in the configuration's units, under the channel of the refused
// action (none for a rule without a value, such as unknown_channel).
func (v *Violation) readings(at time.Time) []Reading {
	if v.Unit == "" {
		return nil
	}
	limit := v.Limit
	return []Reading{{Channel: v.Channel, Value: v.Value, Limit: &limit, Unit: v.Unit, At: at}}
}

// readings is the reading that tripped, with its limit.
func (ev TripEvent) readings() []Reading {
	if ev.Channel == "" {
		return nil
	}
	r := Reading{Channel: ev.Channel, Value: ev.Value, Unit: ev.Unit, At: ev.At}
	if ev.Unit != "" {
		limit := ev.Limit
		r.Limit = &limit
	}
	return []Reading{r}
}

// snapshotReadings lists the valid parts of the snapshot a refusal was
// judged on, in device units: each heated zone's temperature, the chamber's
// pressure, each line's measured flow, each switch and input (1 on, 0
// off), by channel name.
func (e *Envelope) snapshotReadings(r Readings) []Reading {
	var out []Reading
	for i, z := range e.zones {
		if f := e.zoneReading(r, i); !f.At.IsZero() {
			out = append(out, Reading{Channel: ZoneChannel(z.name, ZoneTemperature), Value: float64(f.ProcessValue), Unit: "K", At: f.At})
		}
	}
	if !r.Pressure.At.IsZero() {
		out = append(out, Reading{Channel: "chamber.pressure", Value: float64(r.Pressure.Pressure), Unit: "Pa", At: r.Pressure.At})
	}
	for _, g := range slices.Sorted(maps.Keys(r.Flows)) {
		if f := r.Flows[g]; !f.At.IsZero() {
			out = append(out, Reading{Channel: "flow." + g, Value: float64(f.Flow), Unit: "sccm", At: f.At})
		}
	}
	level := func(prefix string, m map[string]Level) {
		for _, n := range slices.Sorted(maps.Keys(m)) {
			if l := m[n]; !l.At.IsZero() {
				v := 0.0
				if l.On {
					v = 1
				}
				out = append(out, Reading{Channel: prefix + n, Value: v, At: l.At})
			}
		}
	}
	level("switch.", r.Switches)
	level("input.", r.Inputs)
	return out
}
