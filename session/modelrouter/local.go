package modelrouter

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"hcp-edge/session/analysis"
	"hcp-edge/session/analysis/robust"
)

// Quality is what the router reads of a spectrum from the tier-1 fit and a
// few cheap checks, to decide whether to escalate.
type Quality struct {
	SNR       float64 `json:"snr"`
	Residual  float64 `json:"fit_residual"`
	RSquared  float64 `json:"r_squared"`
	Spikes    int     `json:"spikes"`    // pixels standing alone far above both neighbours
	Saturated int     `json:"saturated"` // pixels at a repeated maximum
	// Curvature is the background's bend: how far the middle of the
	// window's baseline lies off the straight line through its edges, in
	// noise levels.
	Curvature float64 `json:"curvature"`
}

// Poor reports whether the spectrum needs more than the tier-1 fit.
func (q Quality) Poor() bool {
	return q.Spikes > 0 || q.Saturated > 0 || q.Curvature > 6 || q.Residual > 0.08 || q.RSquared < 0.97
}

// readQuality fills the cheap checks of the spectrum (x ascending).
func readQuality(x, y []float64, t1 analysis.Result) Quality {
	q := Quality{SNR: t1.SNR, Residual: t1.FitResidual, RSquared: t1.RSquared}
	if !t1.Found {
		q.RSquared = 0
	}
	noise := t1.Noise
	if !(noise > 0) {
		noise = 1
	}
	top, nTop := math.Inf(-1), 0
	for _, v := range y {
		switch {
		case v > top:
			top, nTop = v, 1
		case v == top:
			nTop++
		}
	}
	if nTop > 1 {
		q.Saturated = nTop
	}
	for i := 1; i+1 < len(y); i++ {
		v := y[i]
		nb := (y[i-1] + y[i+1]) / 2
		ex := v - nb
		if ex <= 10*noise { // the level's shot noise is never below the noise
			continue
		}
		if ex*ex <= 100*nb {
			continue
		}
		// a band spreads over several pixels: three away it is still
		// high; a spike is gone there
		far := v
		if i >= 3 && i+3 < len(y) {
			far = math.Min(y[i-3], y[i+3])
		}
		if ex > 0.5*(v-far) {
			q.Spikes++
		}
	}
	// Curvature: medians of three regions of 300–480 cm⁻¹ (x ascending).
	var buf [64]float64
	med := func(lo, hi float64) float64 {
		i, _ := slices.BinarySearch(x, lo)
		j, _ := slices.BinarySearch(x, hi)
		if j <= i || j-i > len(buf) {
			return math.NaN()
		}
		v := buf[:j-i]
		copy(v, y[i:j])
		//lint:ignore S1032 sort.Float64s is slices.Sort since Go 1.22: the float64 instantiation of the generic sort this avoids (docs/FOOTPRINT.md, ninth round)
		sort.Sort(sort.Float64Slice(v))
		return v[len(v)/2]
	}
	a, b, c := med(300, 315), med(440, 455), med(465, 480)
	if !math.IsNaN(a + b + c) {
		// line through a (at 307.5) and c (at 472.5), evaluated at 447.5
		line := a + (c-a)*(447.5-307.5)/(472.5-307.5)
		q.Curvature = math.Abs(b-line) / noise
	}
	return q
}

// fitAnswer is the tier-1 fit's answer.
func fitAnswer(r analysis.Result) Answer {
	a := Answer{Material: r.Material, LayerCount: r.LayerCount, Confidence: r.Confidence}
	if !r.Found {
		a.Rationale = r.Reason
		a.Coverage = []Coverage{}
		return a
	}
	if r.LayerCount > 0 {
		a.Coverage = []Coverage{{Layers: r.LayerCount, Fraction: 1}}
	} else {
		a.Coverage = []Coverage{}
	}
	a.Rationale = fmt.Sprintf("two-Lorentzian fit: A1g−E2g %.2f±%.2f cm⁻¹, SNR %.0f, R² %.3f", r.Distance, r.DistanceErr, r.SNR, r.RSquared)
	if r.Reason != "" {
		a.Rationale += "; " + r.Reason
	}
	return a
}

// robustAnswer is the tier-2 analysis's answer.
func robustAnswer(r robust.Result) Answer {
	a := Answer{Material: r.Material, LayerCount: r.LayerCount, Confidence: r.Confidence, Coverage: []Coverage{}}
	if !r.Found {
		a.Material = ""
		a.Rationale = r.Reason
		return a
	}
	for _, c := range r.Coverage {
		a.Coverage = append(a.Coverage, Coverage{Layers: c.Layers, Fraction: c.Fraction})
	}
	a.Rationale = fmt.Sprintf("robust: %d spikes removed, %d saturated points masked, ALS baseline; A1g−E2g %.2f±%.2f cm⁻¹; decomposition %v",
		r.Spikes, r.Saturated, r.Peaks.Distance, r.Peaks.DistanceErr, r.Coverage)
	return a
}
