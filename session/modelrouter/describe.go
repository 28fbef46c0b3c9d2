package modelrouter

import (
	"encoding/json"
	"math"
	"strings"
	"sync"

	"hcp-edge/session/analysis"
	"hcp-edge/session/analysis/robust"
)

// Description is the compact, token-budgeted account of a spectrum a remote
// model is sent: the fitted peaks with their uncertainties, a summary of
// the fit's residual, the local tier-2 reading when there is one, and the
// spectrum down-sampled to what the model's context window allows.
type Description struct {
	Material      analysis.Material `json:"material,omitempty"`
	IntegrationMS int64             `json:"integration_ms,omitempty"`
	Peaks         *PeakSummary      `json:"peaks,omitempty"`
	// Bands is the tier-1 reading of a material read from its own bands
	// rather than from an E2g/A1g pair (analysis.Result.Bands); Peaks then
	// holds only the fit's layer count, confidence and material.
	Bands    any             `json:"bands,omitempty"`
	Residual ResidualSummary `json:"residual"`
	Local    *LocalSummary   `json:"local_tier2,omitempty"`
	// Spectrum is [shift cm⁻¹, counts] pairs, evenly down-sampled (mean of
	// each group of points) over Window.
	Window   [2]float64   `json:"window_cm1"`
	Every    int          `json:"points_per_sample"`
	Spectrum [][2]float64 `json:"spectrum"`
}

// PeakSummary is the tier-1 fit's peaks, positions and widths in cm⁻¹,
// each with one standard deviation.
type PeakSummary struct {
	E2g         [2]float64 `json:"e2g_pos"`
	E2gFWHM     [2]float64 `json:"e2g_fwhm"`
	A1g         [2]float64 `json:"a1g_pos"`
	A1gFWHM     [2]float64 `json:"a1g_fwhm"`
	Distance    [2]float64 `json:"distance"`
	SNR         float64    `json:"snr"`
	FitLayers   int        `json:"fit_layers"`
	FitConf     float64    `json:"fit_confidence"`
	FitMaterial string     `json:"fit_material,omitempty"`
}

// ResidualSummary is how well the tier-1 fit explains the window.
type ResidualSummary struct {
	RSquared float64 `json:"r_squared"`
	RMSRel   float64 `json:"rms_over_peak"`
	Noise    float64 `json:"noise_counts"`
}

// LocalSummary is the tier-2 reading.
type LocalSummary struct {
	LayerCount int        `json:"layer_count"`
	Coverage   []Coverage `json:"coverage"`
	Confidence float64    `json:"confidence"`
	Spikes     int        `json:"spikes_removed"`
	Saturated  int        `json:"saturated_points"`
}

// EstimateTokens is the router's token estimate of a text: one token per
// four bytes, rounded up (the usual rule of thumb for English and JSON;
// the model's own tokenizer is not shipped in the agent).
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// promptOverhead is the tokens of the system message and the framing.
var promptOverhead = EstimateTokens(systemPrompt()) + 64

// maxAnswerTokens is what the router allows the answer.
const maxAnswerTokens = 400

// describe builds the description of x/y for a model whose context window
// is ctxTokens: the spectrum takes what the window leaves after the prompt
// and the answer, at most half the window, and never fewer than 16 points.
func describe(in *input, ctxTokens int) (string, int) {
	lo, hi, _ := analysis.WindowFor(in.material())
	d := Description{Material: in.req.Material, IntegrationMS: in.req.Spectrum.Integration.Milliseconds(), Window: [2]float64{lo, hi}}
	if t1 := in.t1; t1.Found && t1.Bands() != nil {
		d.Bands = t1.Bands()
		d.Peaks = &PeakSummary{SNR: round(t1.SNR, 1), FitLayers: t1.LayerCount, FitConf: round(t1.Confidence, 3), FitMaterial: string(t1.Material)}
	} else if t1.Found {
		d.Peaks = &PeakSummary{
			E2g: [2]float64{round(t1.E2g.Position, 2), round(t1.E2g.PositionErr, 3)}, E2gFWHM: [2]float64{round(t1.E2g.FWHM, 2), round(t1.E2g.FWHMErr, 3)},
			A1g: [2]float64{round(t1.A1g.Position, 2), round(t1.A1g.PositionErr, 3)}, A1gFWHM: [2]float64{round(t1.A1g.FWHM, 2), round(t1.A1g.FWHMErr, 3)},
			Distance: [2]float64{round(t1.Distance, 2), round(t1.DistanceErr, 3)}, SNR: round(t1.SNR, 1),
			FitLayers: t1.LayerCount, FitConf: round(t1.Confidence, 3), FitMaterial: string(t1.Material),
		}
	}
	d.Residual = ResidualSummary{RSquared: round(in.t1.RSquared, 4), RMSRel: round(in.t1.FitResidual, 4), Noise: round(in.t1.Noise, 1)}
	if t2 := in.t2; t2 != nil && t2.Found {
		d.Local = &LocalSummary{LayerCount: t2.LayerCount, Confidence: round(t2.Confidence, 3), Spikes: t2.Spikes, Saturated: t2.Saturated}
		for _, c := range t2.Coverage {
			d.Local.Coverage = append(d.Local.Coverage, Coverage{Layers: c.Layers, Fraction: round(c.Fraction, 3)})
		}
	}
	var xs, ys []float64
	for i := range in.x {
		if in.x[i] >= lo && in.x[i] <= hi {
			xs, ys = append(xs, in.x[i]), append(ys, in.y[i])
		}
	}
	head, _ := json.Marshal(d)
	budget := min(ctxTokens/2, ctxTokens-promptOverhead-maxAnswerTokens) - EstimateTokens(string(head))
	const tokensPerPoint = 4 // "[385.5,12345]," is 14 bytes
	n := max(16, budget/tokensPerPoint)
	d.Every = max(1, (len(xs)+n-1)/n)
	for i := 0; i < len(xs); i += d.Every {
		j := min(len(xs), i+d.Every)
		sx, sy := 0.0, 0.0
		for k := i; k < j; k++ {
			sx += xs[k]
			sy += ys[k]
		}
		c := float64(j - i)
		d.Spectrum = append(d.Spectrum, [2]float64{round(sx/c, 1), math.Round(sy / c)})
	}
	b, _ := json.Marshal(d)
	return string(b), EstimateTokens(systemPrompt()) + EstimateTokens(string(b)) + 16
}

// systemPrompt tells a remote model what to do with a Description; the
// materials are the analysis's (analysis.Materials).
var systemPrompt = sync.OnceValue(func() string {
	return `You read Raman spectra (532 nm) of thin films of ` + strings.Join(analysis.MaterialNames(), ", ") + ` and count layers. ` +
		`The user message is a JSON description: the fitted peaks (E2g/A1g of a transition-metal dichalcogenide on Si/SiO2) ` +
		`or bands (a material read from its own bands, under "bands") with one-sigma errors, the fit residual, ` +
		`a local robust reading, and the spectrum down-sampled in the material's window. ` +
		`Answer with one JSON object only, valid against this schema: ` + AnswerSchema() +
		` layer_count 4 means bulk (for a material counted 1, 2 or few layers, 3 means few); coverage is the fraction of the covered area per layer count; ` +
		`confidence in [0,1]; rationale one or two sentences.`
})

func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// input is what every model works from.
type input struct {
	req  *Request
	x, y []float64 // sorted, finite
	t1   analysis.Result
	t2   *robust.Result
}

// material is the request's material, or the one tier 1 found.
func (in *input) material() analysis.Material {
	if in.req.Material != "" && in.req.Material != analysis.Auto {
		return in.req.Material
	}
	if in.t1.Material != "" {
		return in.t1.Material
	}
	return analysis.Auto
}
