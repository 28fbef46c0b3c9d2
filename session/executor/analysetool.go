package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/session/analysis"
	"hcp-edge/session/modelrouter"
)

// AnalysisToolRef is the catalog tool the analyse phase calls, AnalysisTool
// as an envelope.ToolRef.
var AnalysisToolRef = envelope.ToolRef{Name: catalog.ToolAnalyze, Version: catalog.BuiltinVersion}

// RegisterAnalysis registers the handler of raman.analyze on iv: an's
// analysis (the model router), or the tier-1 fit alone when an is nil.
// The wiring code calls it wherever it builds the Invoker a Rig runs on.
func RegisterAnalysis(iv *envelope.Invoker, an Analyzer) error {
	return iv.SetCompute(AnalysisToolRef, AnalysisCompute(an))
}

// AnalysisCompute is the handler of raman.analyze: it decodes the input
// (catalog's analyze input schema, already validated), asks an (the
// router: the request's threshold, data class, hint, policy and budgets
// decide how far it escalates), or runs the tier-1 fit when an is nil, and
// encodes the decision (catalog's analyze output schema). It reads the
// spectrum it is given and nothing else.
func AnalysisCompute(an Analyzer) envelope.ComputeTool {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		req, err := decodeAnalysis(input)
		if err != nil {
			return nil, err
		}
		var out analyseOut
		if an == nil {
			a, err := analysis.AnalyzeFor(req.Spectrum, req.Material)
			if err != nil {
				return nil, err
			}
			out = analyseOut{Model: "local-fit", Tier: 1, Material: a.Material, LayerCount: a.LayerCount, Confidence: a.Confidence, Fit: a}
		} else {
			d, err := an.Analyze(ctx, req)
			if err != nil {
				return nil, err
			}
			out = outputOf(d)
		}
		// What the spectrum shows, whatever the request's material: the
		// analyse phase compares it with the recipe's.
		if id, err := analysis.IdentifyFor(req.Spectrum); err == nil {
			out.Identified = &id
		}
		return json.Marshal(out)
	}
}

// analyseIn is raman.analyze's input.
type analyseIn struct {
	Task                string     `json:"task,omitempty"`
	Spectrum            spectrumIn `json:"spectrum"`
	Material            string     `json:"material,omitempty"`
	ConfidenceThreshold float64    `json:"confidence_threshold,omitempty"`
	DataClass           string     `json:"data_class,omitempty"`
	ModelHint           string     `json:"model_hint,omitempty"`
	Policy              string     `json:"policy,omitempty"`
	TimeBudgetMS        int64      `json:"time_budget_ms,omitempty"`
	// CostBudget: nil is the router's default; 0 nothing.
	CostBudget *float64 `json:"cost_budget,omitempty"`
}

// spectrumIn is a device.Spectrum in the tool's JSON.
type spectrumIn struct {
	Shift         []float64 `json:"shift"`
	Counts        []float64 `json:"counts"`
	IntegrationMS int64     `json:"integration_ms"`
	At            string    `json:"at,omitempty"`
}

func spectrumOf(sp device.Spectrum) spectrumIn {
	in := spectrumIn{Shift: sp.Shift, Counts: sp.Counts, IntegrationMS: sp.Integration.Round(time.Millisecond).Milliseconds()}
	if !sp.At.IsZero() {
		in.At = sp.At.UTC().Format(time.RFC3339Nano)
	}
	return in
}

// decodeAnalysis turns the tool's input into the router's Request. What the
// schema cannot say (shift and counts of one length) is an input error.
func decodeAnalysis(input json.RawMessage) (modelrouter.Request, error) {
	bad := func(err error) error {
		return &catalog.ValidationError{Name: catalog.ToolAnalyze, Version: catalog.BuiltinVersion, Which: "input", Err: err}
	}
	var in analyseIn
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return modelrouter.Request{}, bad(err)
	}
	if len(in.Spectrum.Shift) != len(in.Spectrum.Counts) {
		return modelrouter.Request{}, bad(fmt.Errorf("%d shifts for %d counts", len(in.Spectrum.Shift), len(in.Spectrum.Counts)))
	}
	m, err := analysis.ParseMaterial(in.Material)
	if err != nil {
		return modelrouter.Request{}, bad(err)
	}
	sp := device.Spectrum{Shift: in.Spectrum.Shift, Counts: in.Spectrum.Counts, Integration: time.Duration(in.Spectrum.IntegrationMS) * time.Millisecond}
	if in.Spectrum.At != "" {
		if sp.At, err = time.Parse(time.RFC3339Nano, in.Spectrum.At); err != nil {
			return modelrouter.Request{}, bad(err)
		}
	}
	req := modelrouter.Request{Task: in.Task, Spectrum: sp, Material: m, ConfidenceThreshold: in.ConfidenceThreshold,
		DataClass: modelrouter.DataClass(in.DataClass), Hint: modelrouter.Hint(in.ModelHint), Policy: modelrouter.Policy(in.Policy),
		TimeBudget: time.Duration(in.TimeBudgetMS) * time.Millisecond}
	if in.CostBudget != nil {
		req.CostBudget = *in.CostBudget
		if req.CostBudget == 0 {
			req.CostBudget = -1 // the router's "nothing"
		}
	}
	return req, nil
}

// analyseOut is raman.analyze's output: the deciding model's answer, what
// the router tried, its advice, and the tier-1 fit.
type analyseOut struct {
	Routed     bool                   `json:"routed"`
	Model      string                 `json:"model"`
	Tier       int                    `json:"tier"`
	Material   analysis.Material      `json:"material,omitempty"`
	LayerCount int                    `json:"layer_count"`
	Coverage   []modelrouter.Coverage `json:"coverage,omitempty"`
	Confidence float64                `json:"confidence"`
	Rationale  string                 `json:"rationale,omitempty"`
	Fallback   bool                   `json:"fallback"`
	Warnings   []string               `json:"warnings,omitempty"`
	Attempts   []ProvenanceAttempt    `json:"attempts,omitempty"`
	Cost       float64                `json:"cost"`
	Reacquire  *reacquireOut          `json:"reacquire,omitempty"`
	Fit        analysis.Result        `json:"fit"`
	// Identified is what the spectrum shows (analysis.Identify), named
	// whatever material the request analysed it as.
	Identified *analysis.Identification `json:"identified,omitempty"`
}

// reacquireOut is the router's advice of a new acquisition.
type reacquireOut struct {
	IntegrationMS int64  `json:"integration_ms"`
	Reason        string `json:"reason"`
}

// outputOf is the tool's output of the router's decision.
func outputOf(d modelrouter.Decision) analyseOut {
	o := analyseOut{Routed: true, Model: d.Model, Tier: d.Tier, Material: d.Answer.Material, LayerCount: d.Answer.LayerCount,
		Coverage: d.Answer.Coverage, Confidence: d.Answer.Confidence, Rationale: d.Answer.Rationale, Fallback: d.Fallback,
		Warnings: d.Warnings, Cost: d.Cost, Fit: d.Fit}
	for _, at := range d.Attempts {
		o.Attempts = append(o.Attempts, ProvenanceAttempt{Model: at.Model, Tier: at.Tier, Outcome: at.Outcome, Confidence: at.Confidence})
	}
	if rq := d.Reacquire; rq != nil {
		o.Reacquire = &reacquireOut{IntegrationMS: max(rq.Integration.Round(time.Millisecond).Milliseconds(), 1), Reason: rq.Reason}
	}
	return o
}

// callAnalysis asks raman.analyze, through the Rig's tool path with the
// session's token, to analyse sp for the phase's material under the
// task's routing constraints.
func (r *recipeRun) callAnalysis(ctx context.Context, sp device.Spectrum, material string) (analyseOut, error) {
	in := analyseIn{Task: r.env.SessionID, Spectrum: spectrumOf(sp), ConfidenceThreshold: r.st.ThresholdConf,
		DataClass: r.st.DataClass, ModelHint: r.st.ModelHint}
	if m, err := analysis.ParseMaterial(material); err == nil {
		in.Material = string(m)
	} else {
		in.Material = material // refused by the schema: the step fails as an unknown material did
	}
	if dl, ok := ctx.Deadline(); ok {
		// The session's max_duration left, less a margin for the cleanup
		// and the results; none left: the router asks no model that takes
		// time (a millisecond, not 0, which would mean its default).
		in.TimeBudgetMS = max(time.Until(dl)-analysisMargin, time.Millisecond).Milliseconds()
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return analyseOut{}, err
	}
	res, err := r.env.Rig.Invoke(ctx, r.env.Token, AnalysisToolRef, raw)
	if err != nil {
		return analyseOut{}, err
	}
	var out analyseOut
	if err := json.Unmarshal(res, &out); err != nil {
		return analyseOut{}, fmt.Errorf("executor: %s: output: %w", AnalysisTool, err)
	}
	return out, nil
}

// analysisMargin is the session time the analysis leaves for the cleanup
// and the results.
const analysisMargin = time.Minute
