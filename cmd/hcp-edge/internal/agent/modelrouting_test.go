package agent

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
	"hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
	"hcp-edge/session/store"
)

// TestModelRoutingConfigured: the daemon's router enforces the
// model_routing section: its policy decides whether a confident spectrum
// goes to the remote model, and a tiny daily budget (0, or 0.01 with
// 0.00999 already spent today by the tracker in the state directory)
// refuses the remote model over budget, unasked, where the defaults
// (5 a day) would let it answer.
func TestModelRoutingConfigured(t *testing.T) {
	t.Setenv("HCP_STATE_DIR", "")
	t.Setenv("HCP_CONTROL_SOCKET", "")
	x, c, _ := serialsim.SpectrumWith(plant.Film{MoS2: 1}, 1000, 5, serialsim.Effects{Sample: 5})
	y := make([]float64, len(c))
	for i := range c {
		y[i] = float64(c[i])
	}
	spec := device.Spectrum{Shift: x, Counts: y, Integration: time.Second}
	for _, tc := range []struct {
		name, routing string
		spent         float64 // today, in the tracker before the start
		asked         bool
		reason        string // of the remote model's refusal
	}{
		{"maximize quality", "  policy: maximize_quality\n", 0, true, ""},
		{"minimize cost", "  policy: minimize_cost\n", 0, false, ""},
		{"day zero", "  policy: maximize_quality\n  daily_budget: 0\n", 0, false, "the day has"},
		{"day spent", "  policy: maximize_quality\n  task_budget: 0.01\n  daily_budget: 0.01\n", 0.00999, false, "the day has"},
		{"default day", "  policy: maximize_quality\n", 0.00999, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.New()
			defer srv.Close()
			srv.SetAnswer(modeltest.EchoLocal)
			dir := t.TempDir()
			sim, _, _ := strings.Cut(string(configs.SimYAML), "\nmodels:\n")
			cfg := sim + `
models:
  - {id: local-fit, tier: 1, kind: local, model: fit, data_class_cleared: T4, default: true}
  - id: remote
    tier: 3
    kind: openai
    instances: ["` + srv.Base() + `"]
    model: m
    context_window: 8192
    cost_per_1k_input: 0.0001
    cost_per_1k_output: 0.0001
    typical_latency: 100ms
    data_class_cleared: T4
model_routing:
` + tc.routing
			f, err := rigconfig.Parse(strings.NewReader(cfg))
			if err != nil {
				t.Fatal(err)
			}
			f.Agent.StateDir = dir
			if tc.spent > 0 {
				tr := modelrouter.NewTracker(nil)
				tr.Record(modelrouter.Invocation{Task: "earlier", Model: "remote", Tier: 3, Outcome: modelrouter.OK, Cost: tc.spent})
				if err := tr.Save(filepath.Join(dir, rigconfig.ModelTrackerFile)); err != nil {
					t.Fatal(err)
				}
			}
			st, err := store.Open(filepath.Join(dir, "state.db"), store.DefaultOpts())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			a, err := newModelAnalyzer(f, st.Audit(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			d, err := a.Analyze(context.Background(), modelrouter.Request{Task: "s-1", Spectrum: spec, Material: analysis.MoS2, DataClass: modelrouter.T1})
			if err != nil {
				t.Fatal(err)
			}
			if asked := len(srv.Requests()) > 0; asked != tc.asked {
				t.Fatalf("remote asked %v, want %v: %+v", asked, tc.asked, d.Attempts)
			}
			if tc.reason != "" {
				last := d.Attempts[len(d.Attempts)-1]
				if last.Model != "remote" || last.Outcome != modelrouter.Refused || !strings.Contains(last.Error, "over budget") ||
					!strings.Contains(last.Error, tc.reason) {
					t.Fatalf("attempts %+v", d.Attempts)
				}
			}
		})
	}
}
