package budget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"time"
)

// Limits are the budgets of one session. A gas absent from GasVolume, and
// a zero Wall, HeaterEnergy or Actions, has no limit; a gas present with 0
// may not flow at all.
type Limits struct {
	// Wall is the session's max_duration (process time). It is reported
	// with the others but enforced by the session's deadline (L2: FAILED
	// with timeout), not by Check.
	Wall time.Duration
	// GasVolume is the volume each gas may use, in scc.
	GasVolume map[string]float64
	// HeaterEnergy is the heater energy, in seconds at full power.
	HeaterEnergy float64
	// Actions is the number of actuator actions the interlock may execute
	// for the session.
	Actions int
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool {
	return l.Wall == 0 && len(l.GasVolume) == 0 && l.HeaterEnergy == 0 && l.Actions == 0
}

// Tighter returns, budget by budget, the smaller of l's and o's limits (a
// budget only one of them sets is taken from it).
func (l Limits) Tighter(o Limits) Limits {
	out := Limits{Wall: minSet(l.Wall, o.Wall), HeaterEnergy: minSet(l.HeaterEnergy, o.HeaterEnergy),
		Actions: minSet(l.Actions, o.Actions)}
	if len(l.GasVolume)+len(o.GasVolume) > 0 {
		out.GasVolume = maps.Clone(l.GasVolume)
		if out.GasVolume == nil {
			out.GasVolume = map[string]float64{}
		}
		for g, v := range o.GasVolume {
			if have, ok := out.GasVolume[g]; !ok || v < have {
				out.GasVolume[g] = v
			}
		}
	}
	return out
}

func minSet[T int | float64 | time.Duration](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// Spec is the JSON form of budgets: the "budgets" object of a capability
// declaration (its policy) and of a task's constraints (an hcp-edge
// extension, docs/PROTOCOL-NOTES.md).
type Spec struct {
	// GasVolume is the volume each gas may use, in standard cm³ (scc).
	GasVolume map[string]float64 `json:"gas_volume_scc,omitempty"`
	// HeaterFullPower is the heater energy, in seconds at full output.
	HeaterFullPower *float64 `json:"heater_full_power_s,omitempty"`
	// MaxActions is the number of actuator actions.
	MaxActions *int `json:"max_actions,omitempty"`
}

// Limits checks s and returns its Limits. A gas volume must be finite and
// at least 0 (0: the gas may not flow); the heater energy and the action
// count must be above 0. A failure wraps ErrInvalid.
func (s Spec) Limits() (Limits, error) {
	var l Limits
	for g, v := range s.GasVolume {
		if g == "" || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Limits{}, fmt.Errorf("%w: gas_volume_scc %q: %v (want a gas and a volume >= 0)", ErrInvalid, g, v)
		}
		if l.GasVolume == nil {
			l.GasVolume = map[string]float64{}
		}
		l.GasVolume[g] = v
	}
	if p := s.HeaterFullPower; p != nil {
		if math.IsNaN(*p) || math.IsInf(*p, 0) || *p <= 0 {
			return Limits{}, fmt.Errorf("%w: heater_full_power_s %v (want > 0)", ErrInvalid, *p)
		}
		l.HeaterEnergy = *p
	}
	if n := s.MaxActions; n != nil {
		if *n <= 0 {
			return Limits{}, fmt.Errorf("%w: max_actions %d (want > 0)", ErrInvalid, *n)
		}
		l.Actions = *n
	}
	return l, nil
}

// ParseTask returns the budgets a task_submit payload asks for in
// constraints.budgets (zero Limits when it asks for none). Unknown keys, a
// value of the wrong type and a value out of range are refused with an
// error wrapping ErrInvalid.
func ParseTask(payload []byte) (Limits, error) {
	var sub struct {
		Constraints struct {
			Budgets json.RawMessage `json:"budgets"`
		} `json:"constraints"`
	}
	if err := json.Unmarshal(payload, &sub); err != nil {
		return Limits{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	raw := sub.Constraints.Budgets
	if len(raw) == 0 || string(raw) == "null" {
		return Limits{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return Limits{}, fmt.Errorf("%w: constraints.budgets: %v", ErrInvalid, err)
	}
	l, err := s.Limits()
	if err != nil {
		return Limits{}, fmt.Errorf("constraints.budgets: %w", err)
	}
	return l, nil
}
