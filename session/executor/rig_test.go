package executor

import (
	"context"
	"testing"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/session/analysis"
)

// allowAll is the test Authorizer (tokens are session/token's business): it
// authorises every action as session "e2e".
type allowAll struct{ hilbench.AllowAll }

// AuthorizeTool grants every catalog permission (the shipped tokens'
// scopes are proven in cmd/hcp-edge's TestShippedCapabilities).
func (allowAll) AuthorizeTool(context.Context, string, catalog.Tool) (envelope.ToolGrant, error) {
	return envelope.ToolGrant{SessionID: "e2e", Permissions: []catalog.Permission{catalog.PermissionRead,
		catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}}, nil
}

// simBench is the whole simulated rig in-process (cmd/hiltest/hilbench):
// firmware-sim, every driver, the interlock (envelope/testdata), the
// Invoker and the monitor, armed.
type simBench struct{ *hilbench.Bench }

// rig is the production Rig of the bench: every action a tool call
// through the Invoker, readings from the monitor.
func (b *simBench) rig() Rig { return ToolRig(b.Invoker, b.Monitor) }

func newSimBench(t *testing.T, scale float64) *simBench {
	t.Helper()
	rates, _ := NewScaledClock(scale) // the tools' rate limits run on the plant's time
	b := &simBench{hilbench.New(t, hilbench.Opts{TimeScale: scale, Authorizer: allowAll{hilbench.AllowAll{Session: "e2e"}},
		Invoker: &envelope.InvokerOpts{RateClock: rates.Now}, Materials: analysis.MaterialNames(), Arm: "e2e-operator"})}
	if err := RegisterAnalysis(b.Invoker, nil); err != nil { // the tier-1 fit, as an agent without models
		t.Fatal(err)
	}
	return b
}

func loadEnvelope(t testing.TB) *envelope.Envelope { return hilbench.Envelope(t) }
