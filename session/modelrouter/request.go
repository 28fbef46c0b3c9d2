package modelrouter

import (
	"slices"
	"time"

	"hcp-edge/device"
	"hcp-edge/session/analysis"
)

// Hint is the task's constraints.model_hint.
type Hint string

// The hints.
const (
	HintNone Hint = ""
	HintFast Hint = "fast" // tier 1, escalate locally only
	HintBest Hint = "best" // start at the best tier cleared and in budget
)

// Policy is how the router trades quality against time and cost.
type Policy string

// The policies.
const (
	// MinimizeCost escalates only when the confidence is below the
	// threshold, local models before remote ones, cheapest first.
	MinimizeCost Policy = "minimize_cost"
	// Balance (the default) also escalates a confident tier-1 answer when
	// the spectrum's quality is poor (spikes, saturation, a curved
	// background, a bad fit).
	Balance Policy = "balance"
	// MaximizeQuality starts at tier 2 and asks the best model cleared and
	// in budget whatever the confidence.
	MaximizeQuality Policy = "maximize_quality"
)

// Policies are the policies, cheapest first.
func Policies() []Policy { return []Policy{MinimizeCost, Balance, MaximizeQuality} }

// Valid reports whether p is one of Policies.
func (p Policy) Valid() bool { return slices.Contains(Policies(), p) }

// Request is one analysis to route.
type Request struct {
	// Task names the task, for the tracker and the audit: the agent passes
	// the session id, so every invocation is audited under its session.
	Task     string
	Spectrum device.Spectrum
	// Material is one of analysis.Materials or analysis.Auto ("").
	Material analysis.Material
	// ConfidenceThreshold is the task's confidence_threshold (0: 0.8).
	ConfidenceThreshold float64
	// DataClass is the task's data classification ("": T1; anything but
	// T1–T4 is treated as T4).
	DataClass DataClass
	Hint      Hint
	// Policy overrides the router's policy ("": the router's).
	Policy Policy
	// TimeBudget is the time the analysis may take (0: the router's
	// Opts.TimeBudget, which also bounds a longer one: the agent passes the
	// session's time left); a model whose typical latency does not fit in
	// what is left is skipped.
	TimeBudget time.Duration
	// CostBudget is what the task may spend on models (0: the router's
	// default per task; negative: nothing).
	CostBudget float64
}

// Attempt is one invocation of a model instance, or one the router refused.
type Attempt struct {
	Model      string        `json:"model"`
	Instance   string        `json:"instance,omitempty"`
	Tier       int           `json:"tier"`
	Outcome    Outcome       `json:"outcome"`
	Latency    time.Duration `json:"latency_ns"`
	TokensIn   int           `json:"tokens_in,omitempty"`
	TokensOut  int           `json:"tokens_out,omitempty"`
	Cost       float64       `json:"cost,omitempty"`
	Confidence float64       `json:"confidence,omitempty"`
	Error      string        `json:"error,omitempty"`
}

// Reacquire advises a new acquisition: the answer is limited by noise, and
// a longer integration would raise it. The router does not acquire: the
// executor decides (models advise, never act).
type Reacquire struct {
	Integration time.Duration `json:"integration_ns"`
	Reason      string        `json:"reason"`
}

// Decision is the router's answer to a Request: the answer chosen, the
// model that gave it, every attempt, and what it cost.
type Decision struct {
	Answer Answer `json:"answer"`
	// Fit is the tier-1 fit the router read the spectrum with (peaks,
	// distance, residual): the executor reports it beside the answer.
	Fit      analysis.Result `json:"-"`
	Model    string          `json:"model"`
	Tier     int             `json:"tier"`
	Instance string          `json:"instance,omitempty"`
	// Quality is what the router read of the spectrum before choosing.
	Quality  Quality       `json:"quality"`
	Attempts []Attempt     `json:"attempts"`
	Cost     float64       `json:"cost"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Fallback is true when a model the router chose failed and the answer
	// comes from another (a lower tier when every better one failed).
	Fallback bool `json:"fallback"`
	// Warnings say what went wrong without losing the analysis.
	Warnings []string `json:"warnings,omitempty"`
	// Reasons say why the router stopped where it did, when it stopped
	// short of its ladder.
	Reasons   []string   `json:"reasons,omitempty"`
	Reacquire *Reacquire `json:"reacquire,omitempty"`
}
