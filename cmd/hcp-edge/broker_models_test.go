package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

// modelsWith is sim.yaml's models: section replaced by its two local
// models and one remote model at url, cleared for T1 only.
func modelsWith(url string) func(string) string {
	return func(cfg string) string {
		sim, _, ok := strings.Cut(cfg, "\nmodels:\n")
		if !ok {
			panic("fixture: sim.yaml has no models: section")
		}
		return sim + `
models:
  - {id: local-fit, tier: 1, kind: local, model: fit, typical_latency: 1ms, data_class_cleared: T4, default: true}
  - {id: local-robust, tier: 2, kind: local, model: robust, typical_latency: 10ms, data_class_cleared: T4}
  - id: remote-best
    tier: 3
    kind: openai
    instances: ["` + url + `"]
    model: test-model
    context_window: 8192
    cost_per_1k_input: 0.001
    cost_per_1k_output: 0.002
    typical_latency: 200ms
    data_class_cleared: T1
`
	}
}

// TestT3AnalysisStaysLocalThroughBroker: a caller submits the seed's MoS2
// task as T3 data with constraints.model_hint best through RabbitMQ (TLS,
// at-rest key: what T3 needs), and the daemon's registry has a remote model
// cleared for T1 only, an OpenAI-compatible test server that counts what
// it receives. The analysis would escalate to it (best); it is refused for
// the data class: the server receives no request, the refusal is in the
// audit log under the session, the tracker counts it, and the session
// completes with a local model's result, the outputs naming it.
func TestT3AnalysisStaysLocalThroughBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the MoS2 recipe through the real binaries and broker")
	}
	srv := modeltest.New()
	defer srv.Close()
	b, _, _ := tlsBroker(t, modelsWith(srv.Base()))
	b.arm()
	ts := seedSubmit(t)
	ts.Constraints.DataClassification = "T3"
	ts.Constraints.ModelHint = "best"
	run := b.startApproved(t, ts)
	if s := b.sessionByID(run.sid); s.DataClass != "T3" {
		t.Fatalf("session %+v, want T3", s)
	}
	all := run.finish(t, brokerLongGuard)
	fin := all[len(all)-1]
	state := checkCompleted(t, fin, ts, b.grown())
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("T3 data reached a model cleared for T1: %d requests", n)
	}
	if state != "COMPLETED" {
		return // the loaded machine overgrew the film: checkCompleted judged it
	}
	tc, err := fin.TaskCompleted()
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Raman struct {
			Provenance struct {
				Routed   bool   `json:"routed"`
				Model    string `json:"model"`
				Tier     int    `json:"tier"`
				Attempts []struct {
					Model   string `json:"model"`
					Outcome string `json:"outcome"`
				} `json:"attempts"`
			} `json:"provenance"`
		} `json:"raman_analysis"`
	}
	if err := json.Unmarshal(tc.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	p := out.Raman.Provenance
	refusedInOutputs := false
	for _, a := range p.Attempts {
		refusedInOutputs = refusedInOutputs || (a.Model == "remote-best" && a.Outcome == string(modelrouter.Refused))
	}
	if !p.Routed || p.Model == "remote-best" || p.Tier > 2 || !refusedInOutputs {
		t.Fatalf("provenance %+v", p)
	}

	// The refusal in the audit log, under the session.
	r := b.mustCLI("audit", "replay", run.sid, "--json")
	if !strings.Contains(r.stdout, modelrouter.EventRefused) || !strings.Contains(r.stdout, "not cleared") {
		t.Fatalf("no model refusal audited under %s:\n%s", run.sid, r.stdout)
	}
	// The tracker, saved in the state directory, counts it.
	m := b.mustCLI("models", "--json", "--state-dir", b.dir)
	var rep struct {
		Stats []modelrouter.ModelStats `json:"stats"`
	}
	if err := json.Unmarshal([]byte(m.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, s := range rep.Stats {
		if s.Model == "remote-best" {
			refused = s.Outcomes[modelrouter.Refused]
		}
	}
	if refused != 1 {
		t.Fatalf("tracker %+v", rep.Stats)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "model-tracker.json")); err != nil {
		t.Fatal(err)
	}
	t.Logf("T3 analysis decided by %s (tier %d); remote-best refused and audited; the server saw no request", p.Model, p.Tier)
}
