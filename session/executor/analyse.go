package executor

import (
	"context"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/session/analysis"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/modelrouter"
	"hcp-edge/session/recipe"
)

// AnalysisTool names the analysis the analyse phase calls, by name and
// version like every tool: the compute tool raman.analyze of the catalog,
// called through the Rig's tool path (the Invoker) with the session's
// token; its handler is the model router, or the tier-1 fit when the
// agent has none (RegisterAnalysis). It reads a spectrum and reaches no
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
	// Reacquired: the analyse phase acted on a re-acquisition advice (one
	// new acquisition, analysed again); Reacquire is then the advice of the
	// analysis kept, if it has one, and Cost covers both analyses.
	Reacquired *ProvenanceReacquired `json:"reacquired,omitempty"`

	// identified is the tool's identification of the spectrum analysed
	// (the state keeps it as recipeState.Material).
	identified *analysis.Identification
}

// ProvenanceReacquired is the re-acquisition the analyse phase made on the
// router's advice: the integrations, the reason, what each analysis said,
// and which one the outputs keep (the new one unless it is less confident
// or found nothing). Error says why the new acquisition or its analysis
// failed (the first analysis is kept).
type ProvenanceReacquired struct {
	From        time.Duration      `json:"from_integration_ns"`
	Integration time.Duration      `json:"integration_ns"`
	Reason      string             `json:"reason"`
	Before      ProvenanceReading  `json:"before"`
	After       *ProvenanceReading `json:"after,omitempty"`
	Kept        string             `json:"kept"` // "reacquired" or "original"
	Error       string             `json:"error,omitempty"`
}

// ProvenanceReading is what one analysis decided.
type ProvenanceReading struct {
	Model      string  `json:"model"`
	Tier       int     `json:"tier"`
	LayerCount int     `json:"layer_count"`
	Confidence float64 `json:"confidence"`
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
// analysis tool (raman.analyze: the model router; the task's confidence
// threshold, data class, model hint and the time left decide how far it
// escalates), acts on the router's advice of a new acquisition (reacquire.go:
// at most one, within the recipe's range and the time left), names what the
// spectrum shows (the tool's identification, material.go) against what the
// recipe grows, and emits the analysis. Another material's bands where the
// recipe's are absent are measured as that material; a material other than
// the recipe's, a mixture or nothing is a warning event (audited) and the
// session goes on with what was measured. Nothing found completes with
// material none; bands found with no layer count fail the step; a layer
// count other than the target is warned, and so is every fallback of the
// router: when every better model fails the tier-1 answer stands, with a
// warning event, and the analysis is never lost.
func (r *recipeRun) analyse(ctx context.Context, i int, ph *recipe.Phase) error {
	if r.st.Spectrum == nil {
		return fmt.Errorf("%w: no spectrum to analyse", ErrResult)
	}
	expected := ph.Analyse.Material
	a, p, err := r.routed(ctx, expected, *r.st.Spectrum)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrResult, err)
	}
	if a, p, err = r.reacquire(ctx, i, ph, a, p); err != nil {
		return err
	}
	id := r.identification(p)
	if other := id.Strongest(); !a.Found && other != "" && !sameMaterial(string(other), expected) {
		// The recipe's material is not there but another's is: measure
		// what grew, as that material.
		if a2, p2, err := r.routed(ctx, string(other), *r.st.Spectrum); err == nil && a2.Found {
			p2.Cost += p.Cost
			p2.Reacquired = p.Reacquired
			a, p = a2, p2
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	r.st.Analysis, r.st.Provenance = &a, p
	f := findingOf(expected, id)
	r.st.Material = &f
	// The event keeps the shape of the analysis it has always had: the
	// material is in the outputs (raman_analysis.material).
	shown := a
	shown.Material = ""
	if err := r.emit(ctx, lifecycle.EventIntermediateResult, IntermediateResult{ResultType: "raman_analysis", Data: shown}); err != nil {
		return err
	}
	if !f.MatchesRecipe {
		r.warnAudited(ctx, CodeMaterialMismatch, f.message(), f.details())
	}
	if f.Name == analysis.NameNone {
		return nil // nothing grown, or nothing the spectrum shows: the outputs say so
	}
	if !a.Found || a.LayerCount == 0 {
		reason := a.Reason
		if reason == "" {
			reason = fmt.Sprintf("%s (tier %d) found no layer count", p.Model, p.Tier)
		}
		return fmt.Errorf("%w: %s", ErrResult, reason)
	}
	if t := ph.Analyse.TargetLayers; t > 0 && a.LayerCount != t {
		r.warn(ctx, "layer_count_differs", fmt.Sprintf("grew %d layer(s), target %d", a.LayerCount, t), nil)
	}
	return nil
}

// routed runs one analysis of sp as material through the analysis tool.
// The result is the tier-1 fit (its peaks, distance and residual) with the
// deciding model's layer count and confidence; the provenance says which
// model that was, and carries the tool's identification of the spectrum.
// The router's warnings are warning events.
func (r *recipeRun) routed(ctx context.Context, material string, sp device.Spectrum) (analysis.Result, *Provenance, error) {
	out, err := r.callAnalysis(ctx, sp, material)
	if err != nil {
		return analysis.Result{}, nil, err
	}
	a := out.Fit
	if !out.Routed || !a.Found {
		return a, provenanceOf(out), nil // the tier-1 fit alone, or no bands: judged by the phase
	}
	a.LayerCount, a.Bulk, a.Confidence = out.LayerCount, out.LayerCount >= 4, out.Confidence
	if out.Material != "" && out.Material != a.Material && a.Material != "" {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s read the spectrum as %s; the phase analyses %s", out.Model, out.Material, a.Material))
	}
	p := provenanceOf(out)
	details := map[string]any{"model": out.Model, "tier": out.Tier, "confidence": out.Confidence}
	for _, w := range out.Warnings {
		code := "analysis_warning"
		if out.Fallback {
			code = "analysis_fallback"
		}
		r.warn(ctx, code, w, details)
	}
	return a, p, nil
}

// provenanceOf is the outputs' view of the tool's output.
func provenanceOf(o analyseOut) *Provenance {
	p := &Provenance{Tool: AnalysisTool, Routed: o.Routed, Model: o.Model, Tier: o.Tier, Confidence: o.Confidence,
		LayerCount: o.LayerCount, Coverage: o.Coverage, Rationale: o.Rationale, Fallback: o.Fallback, Warnings: o.Warnings,
		Tier1: ProvenanceTier1{LayerCount: o.Fit.LayerCount, Confidence: o.Fit.Confidence}, Attempts: o.Attempts, Cost: o.Cost}
	if rq := o.Reacquire; rq != nil {
		p.Reacquire = &modelrouter.Reacquire{Integration: time.Duration(rq.IntegrationMS) * time.Millisecond, Reason: rq.Reason}
	}
	p.identified = o.Identified
	return p
}

// reading is what p's analysis decided.
func (p *Provenance) reading() ProvenanceReading {
	return ProvenanceReading{Model: p.Model, Tier: p.Tier, LayerCount: p.LayerCount, Confidence: p.Confidence}
}
