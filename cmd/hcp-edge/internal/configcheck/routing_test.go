package configcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/configs"
)

// TestCheckModelRouting: each mistake of the model_routing section is one
// problem at its own file and line: an unknown policy, a negative, infinite
// or non-number budget, a daily budget below the task's, a zero or negative
// time budget, one that is not a duration, an unknown key.
func TestCheckModelRouting(t *testing.T) {
	cleanEnv(t)
	simSec := "\nmodel_routing:\n  policy: balance\n  time_budget: 30s\n  task_budget: 0.05\n  daily_budget: 5\n"
	if !strings.Contains(string(configs.SimYAML), simSec) {
		t.Fatal("fixture: sim.yaml's model_routing section not found")
	}
	for _, c := range []struct {
		name, sec string
		want      []want
	}{
		{"several", `
model_routing:
  policy: cheapest               # POLICY
  time_budget: 0s                # ZERO
  task_budget: -0.01             # NEGATIVE
  max_spend: 3                   # UNKNOWN
`, []want{{"# POLICY", "model_routing.policy"}, {"# ZERO", "model_routing.time_budget"},
			{"# NEGATIVE", "model_routing.task_budget"}, {"# UNKNOWN", "model_routing.max_spend"}}},
		{"negative time", "\nmodel_routing:\n  time_budget: -5s            # NEGTIME\n", []want{{"# NEGTIME", "model_routing.time_budget"}}},
		{"not a duration", "\nmodel_routing:\n  time_budget: 30             # NODUR\n", []want{{"# NODUR", "model_routing.time_budget"}}},
		{"not a number", "\nmodel_routing:\n  daily_budget: lots          # NAN\n", []want{{"# NAN", "model_routing.daily_budget"}}},
		{"infinite", "\nmodel_routing:\n  daily_budget: .inf          # INF\n", []want{{"# INF", "model_routing.daily_budget"}}},
		{"day below task", `
model_routing:
  task_budget: 0.05
  daily_budget: 0.01             # DAY
`, []want{{"# DAY", "model_routing.daily_budget"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(string(configs.SimYAML), simSec, c.sec, 1)
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			r := Check(path, filepath.Join(configsDir, "capabilities"))
			out := report(r)
			for _, w := range c.want {
				prefix := fmt.Sprintf("%s:%d: %s: ", path, lineOf(t, text, w.marker), w.key)
				if !strings.Contains(out, prefix) {
					t.Errorf("missing %q in\n%s", prefix, out)
				}
			}
			if len(r.Problems) != len(c.want) {
				t.Errorf("%d problems, want %d (one per mistake):\n%s", len(r.Problems), len(c.want), out)
			}
			t.Logf("\n%s", out)
		})
	}
	// Accepted: paid models off for the day whatever the task budget.
	text := strings.Replace(string(configs.SimYAML), simSec, "\nmodel_routing:\n  policy: minimize_cost\n  daily_budget: 0\n", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := Check(path, filepath.Join(configsDir, "capabilities")); !r.Valid {
		t.Errorf("daily_budget 0 refused:\n%s", report(r))
	}
}
