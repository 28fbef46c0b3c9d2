package capability

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"hcp-edge/envelope"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

// SafetyEnvelope returns L3's safety_envelope of a session of c on the rig
// whose compiled envelope is env: every channel's hard limit (min, max,
// unit, hard_limit — always true: the envelope enforces no soft limit —
// and max_rate_per_minute), the prohibited actions, the emergency
// procedures (over_temperature, gas_leak_detected, over_pressure,
// comms_loss, estop), the cross-channel interlocks, and the digest of the
// envelope the session token is bound to.
//
// It returns nil for a capability that involves no physical resources: L3
// defines the envelope for physical capabilities, and such a session can
// move nothing (its token holds no permission to open an output).
func (c *Capability) SafetyEnvelope(env *envelope.Envelope) (*wire.SafetyEnvelope, error) {
	if !c.Safety.InvolvesPhysicalResources {
		return nil, nil
	}
	if env == nil {
		return nil, fmt.Errorf("capability %s: safety envelope of a nil rig envelope", c.Name)
	}
	cfg := env.Config()
	out := &wire.SafetyEnvelope{
		Parameters:          make(map[string]wire.EnvelopeParameter, len(cfg.Parameters)),
		ProhibitedActions:   slices.Clone(cfg.ProhibitedActions),
		EmergencyProcedures: maps.Clone(cfg.EmergencyProcedures),
	}
	for ch, p := range cfg.Parameters {
		out.Parameters[ch] = wire.EnvelopeParameter{Min: p.Min, Max: p.Max, Unit: p.Unit, HardLimit: true,
			MaxRatePerMinute: p.MaxRatePerMinute}
	}
	il, err := json.Marshal(cfg.Interlocks)
	if err != nil {
		return nil, fmt.Errorf("capability %s: interlocks: %w", c.Name, err)
	}
	out.Interlocks = il
	if out.Digest, err = token.EnvelopeDigest(env); err != nil {
		return nil, fmt.Errorf("capability %s: %w", c.Name, err)
	}
	if err := out.Validate("safety_envelope"); err != nil {
		return nil, fmt.Errorf("capability %s: %w", c.Name, err)
	}
	return out, nil
}
