package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/executor"
	"hcp-edge/transport/wire"
)

// TestPreviewOverBroker proves the preview extension (docs/PROTOCOL-NOTES.md,
// "Preview") through the real broker and daemon: harness-alpha-001's
// preview_request of the seed MoS2 synthesis is answered with a
// preview_response whose prediction completes, grows about one layer and
// lasts more than an hour of process time, with no refusal, while the rig
// stays untouched (no session, the relay as it was); inputs the executor
// refuses get request_refused invalid_input naming the field, and
// harness-beta-002, whose access list has no synthesis, not_found.
func TestPreviewOverBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end through the real binary and broker")
	}
	b := newBrokerEnv(t)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	alpha := b.client(nil)
	beta := b.betaClient(t)
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), hangGuard)
		t.Cleanup(cancel)
		return c
	}
	seed := json.RawMessage(`{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"celsius"}}`)

	t0 := time.Now()
	r, err := alpha.Preview(ctx(), executor.CVDName, "1.x", seed)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Completed   bool    `json:"completed"`
		ProcessTime float64 `json:"process_time_s"`
		SpeedUp     float64 `json:"speed_up"`
		Refusals    []any   `json:"refusals"`
		Product     struct {
			Material string  `json:"material"`
			Layers   float64 `json:"layers"`
		} `json:"product"`
	}
	if err := json.Unmarshal(r.Prediction, &p); err != nil {
		t.Fatal(err)
	}
	t.Logf("answered in %v: completed %v, %.0f s of process time (%.0f×), %.3f layers of %s",
		time.Since(t0).Round(time.Millisecond), p.Completed, p.ProcessTime, p.SpeedUp, p.Product.Layers, p.Product.Material)
	if r.CalleeID != b.calleeID || r.Capability != executor.CVDName || r.Version != "1.0.0" {
		t.Fatalf("response %s %s %s", r.CalleeID, r.Capability, r.Version)
	}
	if !p.Completed || p.ProcessTime < 3600 || len(p.Refusals) != 0 || p.Product.Material != "MoS2" || p.Product.Layers < 0.8 || p.Product.Layers > 1.2 {
		t.Fatalf("prediction %s", r.Prediction)
	}
	if out := b.mustCLI("sessions", "--all").stdout; strings.Contains(out, executor.CVDName) {
		t.Fatalf("a preview opened a session:\n%s", out)
	}

	_, err = alpha.Preview(ctx(), executor.CVDName, "", json.RawMessage(`{"target_material":"WS2","substrate":"SiO2/Si"}`))
	wantRefused(t, err, wire.ReasonInvalidInput)
	if !strings.Contains(err.Error(), "target_material") {
		t.Fatalf("the refusal does not name the field: %v", err)
	}
	_, err = alpha.Preview(ctx(), executor.CVDName, "", json.RawMessage(`{"substrate":"SiO2/Si","temperature_range":{"min":2000,"max":2100,"unit":"celsius"}}`))
	wantRefused(t, err, wire.ReasonInvalidInput)
	_, err = beta.Preview(ctx(), executor.CVDName, "", seed)
	wantRefused(t, err, wire.ReasonNotFound)
}
