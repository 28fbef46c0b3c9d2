package wire

import (
	"encoding/json"
	"sort"
	"strconv"
)

// SafetyEnvelope is L3's safety_envelope: the hard boundaries that bind a
// session, as task_accepted carries them and capability discovery lists
// them. Parameters, ProhibitedActions and EmergencyProcedures are L3's
// fields; Interlocks and Digest are hcp-edge extensions (see
// docs/PROTOCOL-NOTES.md). Every member is optional on the wire (L3's own
// example is an empty object).
type SafetyEnvelope struct {
	// Parameters are the hard limits per channel ("furnace.setpoint",
	// "flow.Ar", …).
	Parameters map[string]EnvelopeParameter `json:"parameters,omitempty"`
	// ProhibitedActions name the prohibited-action rules in force.
	ProhibitedActions []string `json:"prohibited_actions,omitempty"`
	// EmergencyProcedures map a trip condition (over_temperature,
	// gas_leak_detected, estop, …) to its procedure (immediate_shutdown,
	// close_all_valves_and_alert, safe_state).
	EmergencyProcedures map[string]string `json:"emergency_procedures,omitempty"`
	// Interlocks are the cross-channel conditions (extension): an object
	// with "heater" and "gases" as the agent's envelope configuration
	// writes them, quantities as "value unit" strings.
	Interlocks json.RawMessage `json:"interlocks,omitempty"`
	// Digest is the sha256 of the envelope the session token is bound to
	// (extension), "sha256:" and 64 hex digits.
	Digest string `json:"digest,omitempty"`
}

// EnvelopeParameter is one channel's hard limit: L3's max, unit and
// hard_limit, with hcp-edge's min and max_rate_per_minute (Unit per
// minute).
type EnvelopeParameter struct {
	Min              *float64 `json:"min,omitempty"`
	Max              *float64 `json:"max,omitempty"`
	Unit             string   `json:"unit"`
	HardLimit        bool     `json:"hard_limit"`
	MaxRatePerMinute *float64 `json:"max_rate_per_minute,omitempty"`
}

// Validate checks a safety envelope's shape; field names in errors are
// under prefix (e.g. "payload.safety_envelope"). Errors are *DecodeError.
func (s *SafetyEnvelope) Validate(prefix string) error {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.Parameters))
	for n := range s.Parameters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Parameters[n]
		f := prefix + ".parameters[" + strconv.Quote(truncate(n)) + "]"
		switch {
		case n == "":
			return derr(prefix+".parameters", KindInvalid, "empty channel name")
		case p.Unit == "":
			return derr(f+".unit", KindMissing, "")
		case p.Min == nil && p.Max == nil:
			return derr(f, KindMissing, "want min or max")
		case p.Min != nil && p.Max != nil && *p.Min > *p.Max:
			return derr(f, KindInvalid, "min above max")
		}
	}
	for i, a := range s.ProhibitedActions {
		if err := reqCode(prefix+".prohibited_actions["+strconv.Itoa(i)+"]", a); err != nil {
			return err
		}
	}
	for k, v := range s.EmergencyProcedures {
		if err := reqCode(prefix+".emergency_procedures", k); err != nil {
			return err
		}
		if err := reqCode(prefix+".emergency_procedures["+strconv.Quote(truncate(k))+"]", v); err != nil {
			return err
		}
	}
	return optObject(prefix+".interlocks", s.Interlocks)
}
