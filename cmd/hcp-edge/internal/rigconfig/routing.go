package rigconfig

import (
	"fmt"
	"math"
	"time"

	"hcp-edge/device/catalog"

	"hcp-edge/session/modelrouter"
)

// ModelRouting is the model_routing: section: the model router's policy
// and budgets (modelrouter.Opts; docs/ANALYSIS.md, Budgets). An absent key
// takes the router's default. The costs are in the currency of the
// registry's cost_per_1k_input and cost_per_1k_output. (Named
// model_routing, not routing: the uplink has routing keys of its own.)
type ModelRouting struct {
	// Policy is minimize_cost, balance (the default) or maximize_quality;
	// a task's constraints.model_hint still overrides it per task.
	Policy modelrouter.Policy `yaml:"policy"`
	// TimeBudget is the longest one analysis may take, a Go duration like
	// the models' typical_latency, which it is compared with (default
	// 30s); the session's time left only shortens it.
	TimeBudget *time.Duration `yaml:"time_budget"`
	// TaskBudget is what one task's analyses may spend on remote models
	// (default 0.05; 0: only models that cost nothing).
	TaskBudget *float64 `yaml:"task_budget"`
	// DailyBudget is what all tasks may spend in a UTC day (default 5;
	// 0: only models that cost nothing), held across restarts by the
	// tracker in the state directory.
	DailyBudget *float64 `yaml:"daily_budget"`
}

func (r *ModelRouting) defaults() {
	if r.Policy == "" {
		r.Policy = modelrouter.Balance
	}
	if r.TimeBudget == nil {
		d := modelrouter.DefaultTimeBudget
		r.TimeBudget = &d
	}
	if r.TaskBudget == nil {
		v := modelrouter.DefaultTaskBudget
		r.TaskBudget = &v
	}
	if r.DailyBudget == nil {
		v := modelrouter.DefaultDailyBudget
		r.DailyBudget = &v
	}
}

// Opts returns o with the section's policy and budgets (after Defaults):
// a budget of 0 becomes the router's "nothing" (negative), not its
// default.
func (r ModelRouting) Opts(o modelrouter.Opts) modelrouter.Opts {
	o.Policy = r.Policy
	if r.TimeBudget != nil {
		o.TimeBudget = *r.TimeBudget
	}
	budget := func(p *float64) float64 {
		switch {
		case p == nil:
			return 0 // the router's default
		case *p == 0:
			return -1
		}
		return *p
	}
	o.TaskBudget, o.DailyBudget = budget(r.TaskBudget), budget(r.DailyBudget)
	return o
}

// RoutingError is one problem of the model_routing section.
type RoutingError struct {
	Key    string // the full key, e.g. model_routing.daily_budget
	Reason string
}

// Error is "KEY: REASON", the form configcheck places at the key's line.
func (e *RoutingError) Error() string { return e.Key + ": " + e.Reason }

// Check checks the section (after Defaults): a known policy, a positive
// time budget, finite budgets of 0 or more, and a daily budget not below
// the task budget unless it is 0. The last is an error, not a warning:
// a task budget above the day's can never be spent, so the two values
// are almost certainly swapped or mistyped, and the router would refuse
// for "the day" what the operator meant the task to afford. A daily
// budget of 0 switches paid models off whatever the task budget says.
func (r ModelRouting) Check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &RoutingError{Key: "model_routing." + key, Reason: fmt.Sprintf(format, a...)})
	}
	if !r.Policy.Valid() {
		bad("policy", "%q is not minimize_cost, balance or maximize_quality", r.Policy)
	}
	if d := *r.TimeBudget; d <= 0 {
		bad("time_budget", "%v: must be positive (the longest one analysis may take)", d)
	} else if d >= catalog.AnalyzeTimeout {
		bad("time_budget", "%v: must be shorter than raman.analyze's timeout %v, or the tool is cut off before the router falls back to its tier-1 answer", d, catalog.AnalyzeTimeout)
	}
	ok := func(key string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			bad(key, "%v: a cost of 0 or more (0: only models that cost nothing)", v)
			return false
		}
		return true
	}
	task, daily := *r.TaskBudget, *r.DailyBudget
	taskOK, dailyOK := ok("task_budget", task), ok("daily_budget", daily)
	if taskOK && dailyOK && daily > 0 && daily < task {
		bad("daily_budget", "%g is below task_budget %g: a task could never spend its budget (swapped? 0 switches paid models off)", daily, task)
	}
	return errs
}
