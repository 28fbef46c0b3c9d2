package discovery

import (
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/transport/wire"
)

// TestOffers: discovery of configs/sim.yaml's callers, as shipped, and of
// a wildcard and an unknown caller.
func TestOffers(t *testing.T) {
	f, err := rigconfig.Load(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := capability.LoadDir(shippedCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	env, err := f.CompileEnvelope()
	if err != nil {
		t.Fatal(err)
	}
	acl := f.Gate
	acl.Callers["star"] = gate.CallerACL{Capabilities: []string{"*"}, MaxRiskLevel: "R3", MaxDataClassification: "T1"}
	// A caller authorised for R2 may run no task of cvd-material-synthesis
	// (its floor is R3): it is not offered.
	acl.Callers["star-r2"] = gate.CallerACL{Capabilities: []string{"*"}, MaxRiskLevel: "R2", MaxDataClassification: "T1"}
	acl.Callers["star-r1"] = gate.CallerACL{Capabilities: []string{"*"}, MaxRiskLevel: "R1", MaxDataClassification: "T1"}
	tests := []struct {
		caller, only string
		want         string
		err          error
	}{
		{"harness-alpha-001", "", "cvd-material-synthesis,leak-check,rig-status", nil},
		{"harness-alpha-001", "leak-check", "leak-check", nil},
		{"harness-beta-002", "", "rig-status", nil},
		{"harness-beta-002", "leak-check", "", nil},
		{"star", "", "cvd-material-synthesis,leak-check,rig-status", nil},
		{"star-r2", "", "leak-check,rig-status", nil},
		{"star-r1", "", "rig-status", nil},
		{"star-r1", "leak-check", "", nil},
		{"nobody", "", "", ErrNoACL},
	}
	for _, tc := range tests {
		t.Run(tc.caller+"/"+tc.only, func(t *testing.T) {
			r, err := Offers("hcp-edge", tc.caller, acl, reg, env, tc.only)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if got := strings.Join(names(r), ","); got != tc.want {
				t.Fatalf("Offers %q, want %q", got, tc.want)
			}
			for _, o := range r.Capabilities {
				floor := capability.RiskLevel(o.RiskFloor)
				if floor.Rank() == 0 || floor.Rank() > acl.Callers[tc.caller].MaxRiskLevel.Rank() {
					t.Fatalf("%s offered with risk floor %q to a caller authorised for %s", o.Capability.Name, o.RiskFloor, acl.Callers[tc.caller].MaxRiskLevel)
				}
			}
			e, err := wire.NewEnvelope(nil, r, time.Now())
			if err != nil {
				t.Fatalf("not a valid capabilities_response: %v", err)
			}
			if b, _ := wire.Encode(e); len(b) > wire.DefaultMaxBodySize/4 {
				t.Fatalf("capabilities_response of %d bytes", len(b))
			}
		})
	}
}

// The shipped configuration and its capability declarations.
const (
	shippedConfig       = "../../../../configs/sim.yaml"
	shippedCapabilities = "../../../../configs/capabilities"
)

// names is the capability names r offers, in order.
func names(r *wire.CapabilitiesResponse) []string {
	var out []string
	for _, o := range r.Capabilities {
		out = append(out, o.Capability.Name)
	}
	return out
}
