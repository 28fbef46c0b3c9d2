package rigconfig

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/session/modelrouter"
)

// withRouting is sim.yaml with its model_routing section replaced by sec.
func withRouting(t *testing.T, sec string) string {
	t.Helper()
	s := string(configs.SimYAML)
	i := strings.Index(s, "\nmodel_routing:\n")
	if i < 0 {
		t.Fatal("fixture: sim.yaml has no model_routing section")
	}
	j := strings.Index(s[i+1:], "\n\n")
	if j < 0 {
		t.Fatal("fixture: sim.yaml's model_routing section is not followed by a blank line")
	}
	return s[:i+1] + sec + s[i+1+j:]
}

// TestModelRoutingDefaults: without the section the router's defaults
// hold; sim.yaml writes them out.
func TestModelRoutingDefaults(t *testing.T) {
	for name, text := range map[string]string{"sim.yaml": string(configs.SimYAML), "absent": withRouting(t, "")} {
		f, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o := f.ModelRouting.Opts(modelrouter.Opts{})
		if o.Policy != modelrouter.Balance || o.TimeBudget != modelrouter.DefaultTimeBudget ||
			o.TaskBudget != modelrouter.DefaultTaskBudget || o.DailyBudget != modelrouter.DefaultDailyBudget {
			t.Errorf("%s: opts %+v", name, o)
		}
	}
}

// TestModelRoutingOpts: the section's values reach modelrouter.Opts, a
// budget of 0 as the router's "nothing", and the rest of Opts is kept.
func TestModelRoutingOpts(t *testing.T) {
	f, err := Parse(strings.NewReader(withRouting(t, "model_routing:\n  policy: maximize_quality\n  time_budget: 12s\n  task_budget: 0\n  daily_budget: 0.5\n")))
	if err != nil {
		t.Fatal(err)
	}
	tr := modelrouter.NewTracker(nil)
	o := f.ModelRouting.Opts(modelrouter.Opts{Tracker: tr})
	if o.Policy != modelrouter.MaximizeQuality || o.TimeBudget != 12*time.Second || o.TaskBudget >= 0 || o.DailyBudget != 0.5 || o.Tracker != tr {
		t.Fatalf("opts %+v", o)
	}
}

// TestModelRoutingRefuses: each mistake is a RoutingError at its key,
// through Parse as the daemon loads the file.
func TestModelRoutingRefuses(t *testing.T) {
	for _, c := range []struct{ sec, key, want string }{
		{"  policy: cheapest\n", "model_routing.policy", `"cheapest" is not minimize_cost`},
		{"  time_budget: 0s\n", "model_routing.time_budget", "must be positive"},
		{"  time_budget: -5s\n", "model_routing.time_budget", "must be positive"},
		{"  time_budget: 2m\n", "model_routing.time_budget", "shorter than raman.analyze's timeout"},
		{"  task_budget: -0.01\n", "model_routing.task_budget", "a cost of 0 or more"},
		{"  daily_budget: .inf\n", "model_routing.daily_budget", "a cost of 0 or more"},
		{"  daily_budget: .nan\n", "model_routing.daily_budget", "a cost of 0 or more"},
		{"  task_budget: 2\n  daily_budget: 1\n", "model_routing.daily_budget", "below task_budget 2"},
	} {
		_, err := Parse(strings.NewReader(withRouting(t, "model_routing:\n"+c.sec)))
		var re *RoutingError
		if !errors.As(err, &re) || re.Key != c.key || !strings.Contains(re.Reason, c.want) {
			t.Errorf("%q: err %v, want %s: …%s…", c.sec, err, c.key, c.want)
		}
	}
	// Accepted: a daily budget of 0 below the task's (paid models off),
	// equal budgets, both 0.
	for _, sec := range []string{"  daily_budget: 0\n", "  task_budget: 1\n  daily_budget: 1\n", "  task_budget: 0\n  daily_budget: 0\n"} {
		if _, err := Parse(bytes.NewReader([]byte(withRouting(t, "model_routing:\n"+sec)))); err != nil {
			t.Errorf("%q: %v", sec, err)
		}
	}
	// A budget that is not a number does not decode.
	if _, err := Parse(strings.NewReader(withRouting(t, "model_routing:\n  task_budget: cheap\n"))); err == nil {
		t.Error("task_budget: cheap decoded")
	}
}
