package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

func TestModelsCheck(t *testing.T) {
	t.Setenv("HCP_STATE_DIR", "")
	srv := modeltest.New()
	defer srv.Close()
	sim, _, _ := strings.Cut(string(configs.SimYAML), "\nmodels:\n") // sim.yaml's own models: replaced
	cfg := sim + `
models:
  - {id: local-fit, tier: 1, kind: local, model: fit, data_class_cleared: T4, default: true}
  - id: remote
    tier: 3
    kind: openai
    instances: ["` + srv.Base() + `"]
    model: m
    context_window: 4096
    typical_latency: 100ms
    data_class_cleared: T2
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Models(context.Background(), []string{"--json", "--check", "--config", path}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	var rep ModelsReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Models) != 2 || len(rep.Health) != 1 || !rep.Health[0].OK || rep.Health[0].Circuit != "closed" {
		t.Fatalf("report %+v", rep)
	}
	srv.Close()
	out.Reset()
	if code := Models(context.Background(), []string{"--check", "--config", path}, &out, &errb); code != ExitFailure ||
		!strings.Contains(out.String(), "unreachable") {
		t.Fatalf("exit %d with the instance down:\n%s", code, out.String())
	}
}

// TestModelsReadsTracker: hcp-edge models shows the statistics and the
// day's spend the daemon saved in its state directory.
func TestModelsReadsTracker(t *testing.T) {
	t.Setenv("HCP_STATE_DIR", "")
	dir := t.TempDir()
	tr := modelrouter.NewTracker(nil)
	tr.Record(modelrouter.Invocation{Task: "s-1", Model: "local-robust", Tier: 2, Outcome: modelrouter.OK, Confidence: 0.9})
	tr.Record(modelrouter.Invocation{Task: "s-1", Model: "remote-best", Tier: 3, Outcome: modelrouter.OK, Cost: 0.0125, Confidence: 0.95})
	tr.Record(modelrouter.Invocation{Task: "s-2", Model: "remote-best", Tier: 3, Outcome: modelrouter.Refused})
	if err := tr.Save(filepath.Join(dir, rigconfig.ModelTrackerFile)); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Models(context.Background(), []string{"--json", "--state-dir", dir}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	var rep ModelsReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SpentToday != 0.0125 || len(rep.Stats) != 2 || rep.Stats[1].Model != "remote-best" || rep.Stats[1].Outcomes[modelrouter.Refused] != 1 {
		t.Fatalf("report %+v", rep)
	}
	out.Reset()
	if code := Models(context.Background(), []string{"--state-dir", dir}, &out, &errb); code != ExitOK ||
		!strings.Contains(out.String(), "spent today (UTC): 0.01250") || !strings.Contains(out.String(), "remote-best") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
}

// TestModelsShowsRouting: hcp-edge models shows the model_routing section's
// policy and budgets, and the day's spend against the daily budget; the
// defaults when the section is absent.
func TestModelsShowsRouting(t *testing.T) {
	t.Setenv("HCP_STATE_DIR", "")
	dir := t.TempDir()
	tr := modelrouter.NewTracker(nil)
	tr.Record(modelrouter.Invocation{Task: "s-1", Model: "remote-best", Tier: 3, Outcome: modelrouter.OK, Cost: 0.25})
	if err := tr.Save(filepath.Join(dir, rigconfig.ModelTrackerFile)); err != nil {
		t.Fatal(err)
	}
	sim := string(configs.SimYAML)
	i := strings.Index(sim, "\nmodel_routing:\n")
	j := strings.Index(sim[i+1:], "\n\n")
	if i < 0 || j < 0 {
		t.Fatal("fixture: sim.yaml's model_routing section not found")
	}
	for _, c := range []struct {
		name, sec string
		want      RoutingReport
		text      []string
	}{
		{"configured", "model_routing:\n  policy: minimize_cost\n  time_budget: 12s\n  task_budget: 0.1\n  daily_budget: 1",
			RoutingReport{Policy: modelrouter.MinimizeCost, TimeBudget: "12s", TaskBudget: 0.1, DailyBudget: 1, DailyLeft: 0.75},
			[]string{"policy minimize_cost; time budget 12s per analysis; task budget 0.1", "spent today (UTC): 0.25000 of daily budget 1, 0.75000 left"}},
		{"defaults", "",
			RoutingReport{Policy: modelrouter.Balance, TimeBudget: "30s", TaskBudget: 0.05, DailyBudget: 5, DailyLeft: 4.75},
			[]string{"policy balance; time budget 30s per analysis; task budget 0.05", "spent today (UTC): 0.25000 of daily budget 5, 4.75000 left"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(sim[:i+1]+c.sec+sim[i+1+j:]), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := Models(context.Background(), []string{"--json", "--state-dir", dir, "--config", path}, &out, &errb); code != ExitOK {
				t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
			}
			var rep ModelsReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Routing != c.want || rep.SpentToday != 0.25 {
				t.Fatalf("routing %+v, spent %v; want %+v", rep.Routing, rep.SpentToday, c.want)
			}
			out.Reset()
			if code := Models(context.Background(), []string{"--state-dir", dir, "--config", path}, &out, &errb); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			for _, s := range c.text {
				if !strings.Contains(out.String(), s) {
					t.Errorf("missing %q in\n%s", s, out.String())
				}
			}
		})
	}
}
