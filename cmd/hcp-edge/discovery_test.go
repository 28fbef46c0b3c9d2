package main

import (
	"encoding/json"
	"strings"
	"testing"

	"hcp-edge/transport/wire"
)

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
