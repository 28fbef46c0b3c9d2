package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/session/gate"
	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// TestOffers: discovery of configs/sim.yaml's callers, as shipped, and of
// a wildcard and an unknown caller.
func TestOffers(t *testing.T) {
	f, err := loadConfig(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := loadRegistry(shippedConfig, f.Agent.CapabilitiesDir)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := rigconfig.Spec(f.Rig)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(f.Envelope, spec)
	if err != nil {
		t.Fatal(err)
	}
	acl := f.Gate
	acl.Callers["star"] = gate.CallerACL{Capabilities: []string{"*"}, MaxRiskLevel: "R1", MaxDataClassification: "T1"}
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
		{"nobody", "", "", errNoACL},
	}
	for _, tc := range tests {
		t.Run(tc.caller+"/"+tc.only, func(t *testing.T) {
			r, err := offers("hcp-edge", tc.caller, acl, reg, env, tc.only)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if got := strings.Join(names(r), ","); got != tc.want {
				t.Fatalf("offers %q, want %q", got, tc.want)
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

// TestCapabilitiesVerb: hcp-edge capabilities prints every caller's set,
// one harness's by caller id or broker login, and refuses an unknown one.
func TestCapabilitiesVerb(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	out := e.mustCLI("capabilities").stdout
	if !strings.Contains(out, "caller harness-alpha-001") || !strings.Contains(out, "caller harness-beta-002") ||
		!strings.Contains(out, "furnace.setpoint≤1000 celsius") {
		t.Fatalf("capabilities:\n%s", out)
	}
	var r wire.CapabilitiesResponse
	js := e.mustCLI("capabilities", "--as", "harness-beta-002", "--json").stdout
	if err := json.Unmarshal([]byte(js), &r); err != nil || strings.Join(names(&r), ",") != "rig-status" || r.Capabilities[0].SafetyEnvelope != nil {
		t.Fatalf("capabilities --as harness-beta-002 --json: %v\n%s", err, js)
	}
	if res := e.cli("capabilities", "--as", "nobody"); res.code != exitFailure || !strings.Contains(res.stderr, "no permissions") {
		t.Fatalf("--as nobody: exit %d %q", res.code, res.stderr)
	}
	if res := e.cli("capabilities", "extra"); res.code != exitUsage {
		t.Fatalf("extra argument: exit %d", res.code)
	}
}
