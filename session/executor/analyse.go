package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/hcp-edge/hcp-edge/session/analysis"
	"github.com/hcp-edge/hcp-edge/session/lifecycle"
	"github.com/hcp-edge/hcp-edge/session/modelrouter"
	"github.com/hcp-edge/hcp-edge/session/recipe"
)

// AnalysisTool names the analysis the analyse phase calls, by name and
// version like every tool: the Env's Analyzer (the model router), or the
// tier-1 fit when there is none. It reads a spectrum and reaches no
// instrument.
const AnalysisTool = "raman.analyze@1.0.0"

// Provenance is raman_analysis.provenance in the outputs: which model
// decided the layer count and the confidence, how sure it was, and what
// the router tried. Instance URLs and error texts stay in the local audit
// (model_invocation entries); the caller sees models, tiers and outcomes.
type Provenance struct {
	Tool string `json:"tool"`
	// Routed is false when no router was configured (the tier-1 fit alone).
	Routed     bool                   `json:"routed"`
	Model      string                 `json:"model"`
	Tier       int                    `json:"tier"`
	Confidence float64                `json:"confidence"`
	LayerCount int                    `json:"layer_count"`
	Coverage   []modelrouter.Coverage `json:"coverage,omitempty"`
	Rationale  string                 `json:"rationale,omitempty"`
	// Fallback: a model the router chose failed and another decided.
	Fallback bool     `json:"fallback"`
	Warnings []string `json:"warnings,omitempty"`
	// Tier1 is what the tier-1 fit alone said.
	Tier1    ProvenanceTier1     `json:"tier1"`
	Attempts []ProvenanceAttempt `json:"attempts,omitempty"`
	// Cost is what the remote models cost, in the registry's currency.
	Cost      float64                `json:"cost"`
	Reacquire *modelrouter.Reacquire `json:"reacquire,omitempty"`
}

// ProvenanceTier1 is the tier-1 fit's own reading.
type ProvenanceTier1 struct {
	LayerCount int     `json:"layer_count"`
	Confidence float64 `json:"confidence"`
}

// ProvenanceAttempt is one model the router invoked or refused.
type ProvenanceAttempt struct {
	Model      string              `json:"model"`
	Tier       int                 `json:"tier"`
	Outcome    modelrouter.Outcome `json:"outcome"`
	Confidence float64             `json:"confidence,omitempty"`
}

// provenance is the state's provenance, or the tier-1 fit's when the
// analysis predates the router (a checkpoint of an earlier version).
func (r *recipeRun) provenance() *Provenance {
	if p := r.st.Provenance; p != nil {
		return p
	}
	a := r.st.Analysis
	return &Provenance{Tool: AnalysisTool, Model: "local-fit", Tier: 1, Confidence: a.Confidence, LayerCount: a.LayerCount,
		Tier1: ProvenanceTier1{LayerCount: a.LayerCount, Confidence: a.Confidence}}
}

// analyse analyses the last spectrum as the phase's material through the
// Env's Analyzer (the model router: the task's confidence threshold, data
// class, model hint and the time left decide how far it escalates) and
// emits the analysis; no bands, or no layer count, fails the step; a
// layer count other than the target is warned, and so is every fallback of
// the router: when every better model fails the tier-1 answer stands, with
// a warning event, and the analysis is never lost.
func (r *recipeRun) analyse(ctx context.Context, ph *recipe.Phase) error {
	if r.st.Spectrum == nil {
		return fmt.Errorf("%w: no spectrum to analyse", ErrResult)
	}
	a, err := r.routed(ctx, ph)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrResult, err)
	}
	r.st.Analysis = &a
	// The material is the phase's (the plan says which); the event keeps
	// the shape of the analysis it has always had.
	shown := a
	shown.Material = ""
	if err := r.emit(ctx, lifecycle.EventIntermediateResult, IntermediateResult{ResultType: "raman_analysis", Data: shown}); err != nil {
		return err
	}
	if !a.Found || a.LayerCount == 0 {
		reason := a.Reason
		if reason == "" {
			reason = fmt.Sprintf("%s (tier %d) found no layer count", r.st.Provenance.Model, r.st.Provenance.Tier)
		}
		return fmt.Errorf("%w: %s", ErrResult, reason)
	}
	if t := ph.Analyse.TargetLayers; t > 0 && a.LayerCount != t {
		r.warn(ctx, "layer_count_differs", fmt.Sprintf("grew %d layer(s), target %d", a.LayerCount, t), nil)
	}
	return nil
}

// routed runs the analysis: the tier-1 fit alone without an Analyzer, the
// router's decision with one. The result is the tier-1 fit (its peaks,
// distance and residual) with the deciding model's layer count and
// confidence; r.st.Provenance says which model that was.
func (r *recipeRun) routed(ctx context.Context, ph *recipe.Phase) (analysis.Result, error) {
	material := analysis.Material(ph.Analyse.Material)
	if r.env.Analyzer == nil {
		a, err := analysis.AnalyzeFor(*r.st.Spectrum, material)
		if err != nil {
			return a, err
		}
		r.st.Provenance = &Provenance{Tool: AnalysisTool, Model: "local-fit", Tier: 1, Confidence: a.Confidence, LayerCount: a.LayerCount,
			Tier1: ProvenanceTier1{LayerCount: a.LayerCount, Confidence: a.Confidence}}
		return a, nil
	}
	req := modelrouter.Request{Task: r.env.SessionID, Spectrum: *r.st.Spectrum, Material: material,
		ConfidenceThreshold: r.st.ThresholdConf, DataClass: modelrouter.DataClass(r.st.DataClass), Hint: modelrouter.Hint(r.st.ModelHint)}
	if dl, ok := ctx.Deadline(); ok {
		// The session's max_duration left, less a margin for the cleanup
		// and the results; none left: the router asks no model that takes
		// time (a nanosecond, not 0, which would mean its default).
		req.TimeBudget = max(time.Until(dl)-time.Minute, time.Nanosecond)
	}
	d, err := r.env.Analyzer.Analyze(ctx, req)
	if err != nil {
		return analysis.Result{}, err
	}
	a := d.Fit
	if !a.Found {
		r.st.Provenance = provenanceOf(d)
		return a, nil // the tier-1 fit found no bands: failed as before the router
	}
	a.LayerCount, a.Bulk, a.Confidence = d.Answer.LayerCount, d.Answer.LayerCount >= 4, d.Answer.Confidence
	if d.Answer.Material != "" && d.Answer.Material != a.Material && a.Material != "" {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s read the spectrum as %s; the phase analyses %s", d.Model, d.Answer.Material, a.Material))
	}
	r.st.Provenance = provenanceOf(d)
	details := map[string]any{"model": d.Model, "tier": d.Tier, "confidence": d.Answer.Confidence}
	for _, w := range d.Warnings {
		code := "analysis_warning"
		if d.Fallback {
			code = "analysis_fallback"
		}
		r.warn(ctx, code, w, details)
	}
	if d.Reacquire != nil {
		r.warn(ctx, "reacquire_advised", fmt.Sprintf("a new acquisition at %v would help: %s", d.Reacquire.Integration, d.Reacquire.Reason),
			map[string]any{"integration_ms": d.Reacquire.Integration.Milliseconds()})
	}
	return a, nil
}

// provenanceOf is the outputs' view of a decision.
func provenanceOf(d modelrouter.Decision) *Provenance {
	p := &Provenance{Tool: AnalysisTool, Routed: true, Model: d.Model, Tier: d.Tier, Confidence: d.Answer.Confidence,
		LayerCount: d.Answer.LayerCount, Coverage: d.Answer.Coverage, Rationale: d.Answer.Rationale, Fallback: d.Fallback,
		Warnings: d.Warnings, Tier1: ProvenanceTier1{LayerCount: d.Fit.LayerCount, Confidence: d.Fit.Confidence},
		Cost: d.Cost, Reacquire: d.Reacquire}
	for _, at := range d.Attempts {
		p.Attempts = append(p.Attempts, ProvenanceAttempt{Model: at.Model, Tier: at.Tier, Outcome: at.Outcome, Confidence: at.Confidence})
	}
	return p
}
