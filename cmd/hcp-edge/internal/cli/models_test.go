package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/configs"
	"github.com/hcp-edge/hcp-edge/session/modelrouter"
	"github.com/hcp-edge/hcp-edge/session/modelrouter/modeltest"
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
