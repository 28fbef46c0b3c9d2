package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/transport/wire"
)

// ErrNoACL: the caller has no entry in the gate's access control list.
var ErrNoACL = errors.New("no permissions on this agent")

// Offers is what callerID may use per acl: every version of every
// capability its ACL names ("*": all) whose risk floor is within the
// caller's max_risk_level (the gate refuses every task of one above it),
// with the declaration, the floor and the safety envelope of a session of
// it; only, when set, keeps that capability alone. A caller without an ACL
// entry is ErrNoACL.
func Offers(calleeID, callerID string, acl gate.Config, reg *capability.Registry, env *envelope.Envelope, only string) (*wire.CapabilitiesResponse, error) {
	a, ok := acl.Callers[callerID]
	if !ok {
		return nil, fmt.Errorf("caller %s: %w", callerID, ErrNoACL)
	}
	out := &wire.CapabilitiesResponse{CalleeID: calleeID, CallerID: callerID, MaxRiskLevel: string(a.MaxRiskLevel),
		MaxDataClassification: string(a.MaxDataClassification), Capabilities: []wire.CapabilityOffer{}}
	for _, c := range reg.All() {
		if !slices.Contains(a.Capabilities, c.Name) && !slices.Contains(a.Capabilities, "*") {
			continue
		}
		if only != "" && c.Name != only {
			continue
		}
		floor := gate.Floor(acl, c)
		if floor.Rank() > a.MaxRiskLevel.Rank() {
			continue
		}
		o, err := offer(c, env)
		if err != nil {
			return nil, err
		}
		o.RiskFloor = string(floor)
		out.Capabilities = append(out.Capabilities, o)
	}
	return out, nil
}

// offer is c as discovery lists it.
func offer(c *capability.Capability, env *envelope.Envelope) (wire.CapabilityOffer, error) {
	safety, err := json.Marshal(c.Safety)
	if err != nil {
		return wire.CapabilityOffer{}, err
	}
	d := wire.CapabilityDeclaration{Name: c.Name, Version: c.Version, Description: c.Description,
		InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, Safety: safety}
	if c.Constraints != (capability.Constraints{}) {
		if d.Constraints, err = json.Marshal(c.Constraints); err != nil {
			return wire.CapabilityOffer{}, err
		}
	}
	se, err := c.SafetyEnvelope(env)
	if err != nil {
		return wire.CapabilityOffer{}, err
	}
	return wire.CapabilityOffer{Capability: d, SafetyEnvelope: se}, nil
}
