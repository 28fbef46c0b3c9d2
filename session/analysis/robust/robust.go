package robust

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"hcp-edge/session/analysis"
)

// ErrNoData wraps analysis.ErrNoData: the spectrum has too few usable
// points.
var ErrNoData = analysis.ErrNoData

// Opts tunes Analyze.
type Opts struct {
	// Lambda and P are the ALS baseline's smoothness and asymmetry.
	Lambda, P float64
	// SpikeSigma is how many noise levels a spike stands above its
	// neighbours.
	SpikeSigma float64
	// Fit is the tier-1 fit's options.
	Fit analysis.Opts
}

// DefaultOpts returns λ 1e5, p 0.01, SpikeSigma 8 and analysis.DefaultOpts.
func DefaultOpts() Opts {
	return Opts{Lambda: 1e5, P: 0.01, SpikeSigma: 8, Fit: analysis.DefaultOpts()}
}

// SiShift is the silicon substrate's first-order line, cm⁻¹.
const SiShift = 520.7

// Coverage is the share of the covered area with one layer count.
type Coverage struct {
	Layers   int     `json:"layers"` // 4 = bulk
	Fraction float64 `json:"fraction"`
	Err      float64 `json:"fraction_err"` // one standard deviation
}

// Result is the tier-2 analysis of one spectrum.
type Result struct {
	// Found is false when no material's bands were found; Reason says why.
	Found    bool              `json:"found"`
	Reason   string            `json:"reason,omitempty"`
	Material analysis.Material `json:"material,omitempty"`
	// Peaks is the tier-1 two-Lorentzian fit on the cleaned spectrum: peak
	// positions, widths and amplitudes with their uncertainties, distance,
	// SNR, R² and residual.
	Peaks analysis.Result `json:"peaks"`
	// LayerCount is the layer count covering most of the covered area (4 =
	// bulk, 0 when not found); Coverage has every layer count present,
	// thinnest first.
	LayerCount int        `json:"layer_count"`
	Coverage   []Coverage `json:"coverage"`
	Confidence float64    `json:"confidence"`
	// What the cleaning did: spikes replaced, points masked as saturated,
	// the Si line's fitted position (0 when not used) and the axis
	// correction applied.
	Spikes       int     `json:"spikes"`
	Saturated    int     `json:"saturated"`
	SiPosition   float64 `json:"si_position_cm1,omitempty"`
	AxisOffset   float64 `json:"axis_offset_cm1"`
	Noise        float64 `json:"noise"`
	BaselineMean float64 `json:"baseline_mean"` // mean ALS baseline in the window, counts
}

// layerTable is the published band positions (E2g, A1g) per layer count
// 1..4 (4 = bulk): MoS2 after Lee et al. 2010, WS2 after Berkdemir et al.
// 2013 (see package analysis).
var layerTable = map[analysis.Material][4][2]float64{
	analysis.MoS2: {{385.2, 403.9}, {383.8, 405.3}, {383.3, 406.3}, {382.6, 407.6}},
	analysis.WS2:  {{357.0, 418.0}, {356.5, 419.3}, {356.0, 419.9}, {355.5, 420.5}},
}

// Analyze analyses shift/counts (any order; non-finite points dropped) as a
// spectrum of m (analysis.MoS2, analysis.WS2, or analysis.Auto to decide).
// It returns an error wrapping ErrNoData for an unusable spectrum and one
// wrapping analysis.ErrUnknownMaterial for an unknown m.
func Analyze(shift, counts []float64, m analysis.Material, o Opts) (Result, error) {
	if m == "" {
		m = analysis.Auto
	}
	if _, _, ok := analysis.WindowFor(m); !ok {
		return Result{}, fmt.Errorf("%w: %q", analysis.ErrUnknownMaterial, string(m))
	}
	if o.Lambda <= 0 {
		o = DefaultOpts()
	}
	xs, ys, err := sorted(shift, counts)
	if err != nil {
		return Result{}, err
	}
	var r Result
	mask := saturated(ys)
	for _, b := range mask {
		if b {
			r.Saturated++
		}
	}
	noise := noiseOf(ys, mask)
	r.Noise = noise
	r.Spikes = despike(ys, mask, noise, o.SpikeSigma)
	if m == analysis.Graphene {
		return r.graphene(xs, ys, mask, o), nil
	}
	if pos, ok := siLine(xs, ys, mask); ok {
		r.SiPosition = pos
	}
	if pos := r.SiPosition; pos != 0 && math.Abs(SiShift-pos) >= minAxisOffset {
		r.AxisOffset = SiShift - pos
		for i := range xs {
			xs[i] += r.AxisOffset
		}
	}
	// The baseline over everything below the Si line.
	lo := sort.SearchFloat64s(xs, 300)
	hi := sort.SearchFloat64s(xs, 480)
	if hi-lo < 60 {
		return Result{}, fmt.Errorf("%w: %d points in 300–480 cm⁻¹", ErrNoData, hi-lo)
	}
	wx, wy, wm := xs[lo:hi], ys[lo:hi], mask[lo:hi]
	base := als(wy, wm, o.Lambda, o.P, 10)
	var cx, cy []float64
	for i := range wx {
		if !wm[i] {
			cx, cy = append(cx, wx[i]), append(cy, wy[i]-base[i])
		}
	}
	r.BaselineMean = mean(base)

	mats := []analysis.Material{m}
	if m == analysis.Auto {
		mats = []analysis.Material{analysis.MoS2, analysis.WS2}
	}
	var best *Result
	for _, mat := range mats {
		c := r
		c.analyzeAs(mat, cx, cy, o)
		if best == nil || c.better(best) {
			cc := c
			best = &cc
		}
	}
	return *best, nil
}

// graphene fills r for a graphene spectrum: the graphene reading
// (analysis.AnalyzeGraphene) on the points left after the saturated ones
// are masked and the spikes replaced. Its layer count has no coverage
// decomposition: Coverage holds the count read, whole.
func (r Result) graphene(xs, ys []float64, mask []bool, o Opts) Result {
	var cx, cy []float64
	for i := range xs {
		if !mask[i] {
			cx, cy = append(cx, xs[i]), append(cy, ys[i])
		}
	}
	r.Material = analysis.Graphene
	p, err := analysis.AnalyzeGraphene(cx, cy, o.Fit)
	r.Peaks = p
	switch {
	case err != nil:
		r.Reason = err.Error()
	case !p.Found:
		r.Reason = p.Reason
	default:
		r.Found, r.LayerCount, r.Confidence = true, p.LayerCount, p.Confidence
		r.Coverage = []Coverage{{Layers: p.LayerCount, Fraction: 1}}
		if r.Saturated > 0 {
			r.Confidence *= 0.8 // a band's top may be among the masked points
		}
	}
	return r
}

// better reports whether r is the more convincing result.
func (r *Result) better(o *Result) bool {
	if r.Found != o.Found {
		return r.Found
	}
	return r.Peaks.SNR > o.Peaks.SNR
}

// analyzeAs fills r for material m from the corrected points.
func (r *Result) analyzeAs(m analysis.Material, x, y []float64, o Opts) {
	r.Material = m
	p, err := analysis.AnalyzeMaterial(x, y, m, o.Fit)
	r.Peaks = p
	if err != nil {
		r.Reason = err.Error()
		return
	}
	if !p.Found {
		r.Reason = p.Reason
		return
	}
	d, ok := decompose(layerTable[m], x, y, p.Noise)
	if !ok {
		r.Reason = "the layer decomposition found no band"
		return
	}
	r.Found = true
	r.Coverage = d.cov
	r.LayerCount = d.dominant()
	fit := clamp01(1-5*(1-p.RSquared)) * clamp01(1-math.Exp(-p.SNR/8))
	dom := 0.0
	for _, c := range d.cov {
		dom = math.Max(dom, c.Fraction)
	}
	r.Confidence = clamp01(fit * (0.5 + 0.5*clamp01((dom-0.5)/0.3)))
	if p.LayerCount != 0 && p.LayerCount != r.LayerCount && len(d.cov) == 1 {
		// The two-peak distance and the decomposition disagree on a film
		// the decomposition calls uniform: trust neither fully.
		r.Confidence *= 0.7
	}
}

// sorted keeps the finite points, sorted by shift, duplicates averaged.
func sorted(shift, counts []float64) (xs, ys []float64, err error) {
	if len(shift) != len(counts) {
		return nil, nil, fmt.Errorf("%w: %d shifts for %d counts", ErrNoData, len(shift), len(counts))
	}
	type pt struct{ x, y float64 }
	pts := make([]pt, 0, len(shift))
	for i := range shift {
		if finite(shift[i]) && finite(counts[i]) && math.Abs(counts[i]) < 1e15 {
			pts = append(pts, pt{shift[i], counts[i]})
		}
	}
	sort.Slice(pts, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b pt) int {
			switch {
			case a.x < b.x:
				return -1
			case a.x > b.x:
				return 1
			}
			return 0
		}(pts[i], pts[j]) < 0
	})
	for i := 0; i < len(pts); {
		j, s := i, 0.0
		for j < len(pts) && pts[j].x == pts[i].x {
			s += pts[j].y
			j++
		}
		xs, ys = append(xs, pts[i].x), append(ys, s/float64(j-i))
		i = j
	}
	if len(xs) < 60 {
		return nil, nil, fmt.Errorf("%w: %d finite points", ErrNoData, len(xs))
	}
	return xs, ys, nil
}

// saturated masks the pixels at the spectrum's highest count when at least
// two hold it: a detector clipped at its full well.
func saturated(y []float64) []bool {
	mask := make([]bool, len(y))
	top := slices.Max(y)
	n := 0
	for _, v := range y {
		if v == top {
			n++
		}
	}
	if n < 2 || top <= 0 {
		return mask
	}
	for i, v := range y {
		if v == top {
			mask[i] = true
		}
	}
	return mask
}

// noiseOf is the robust noise level: the median absolute second difference
// scaled to a standard deviation.
func noiseOf(y []float64, mask []bool) float64 {
	var d []float64
	for i := 1; i+1 < len(y); i++ {
		if !mask[i-1] && !mask[i] && !mask[i+1] {
			d = append(d, math.Abs(y[i]-(y[i-1]+y[i+1])/2))
		}
	}
	if len(d) == 0 {
		return 1
	}
	return math.Max(median(d)/0.6745/math.Sqrt(1.5), 1e-9)
}

// despike replaces cosmic-ray spikes in y (package doc, step 2) and returns
// how many pixels it replaced.
func despike(y []float64, mask []bool, noise, sigma float64) int {
	n := len(y)
	total := 0
	for pass := 0; pass < 4; pass++ {
		var hits []int
		for i := 1; i+1 < n; i++ {
			if mask[i] {
				continue
			}
			nb := (y[i-1] + y[i+1]) / 2
			ex := y[i] - nb
			if ex <= sigma*noise { // the common case, without a median
				continue
			}
			lo, hi := max(0, i-10), min(n, i+11)
			loc := median(y[lo:hi])
			// shot noise grows with the level: scale the threshold too
			lvl := math.Max(noise, math.Sqrt(math.Max(loc, 0)))
			if ex > sigma*lvl && ex > 0.5*(y[i]-loc) {
				hits = append(hits, i)
			}
		}
		if len(hits) == 0 {
			break
		}
		for _, i := range hits {
			y[i] = (y[i-1] + y[i+1]) / 2
			if i+2 < n && y[i+1] > y[i]+sigma*noise {
				// the spike's second pixel: the next pass would see it with
				// the first already lowered; take the outer neighbours now.
				y[i] = (y[i-1] + y[i+2]) / 2
			}
		}
		total += len(hits)
	}
	return total
}

// minAxisOffset is the smallest axis correction applied: below it the Si
// line's position is within its own estimate's error, and the
// decomposition's offset search absorbs it.
const minAxisOffset = 0.15

// siLine finds the Si line's position when it is seen, unsaturated, within
// 3 cm⁻¹ of SiShift: above the median of 495–505 cm⁻¹ a Lorentzian's
// reciprocal is a parabola in x, whose vertex through the top three points
// is the line's centre (exact for a Lorentzian on a flat background).
func siLine(x, y []float64, mask []bool) (float64, bool) {
	best := -1
	for i := range x {
		if x[i] >= SiShift-5 && x[i] <= SiShift+5 && (best < 0 || y[i] > y[best]) {
			best = i
		}
	}
	if best < 1 || best+1 >= len(x) || mask[best] || mask[best-1] || mask[best+1] {
		return 0, false
	}
	lo := sort.SearchFloat64s(x, SiShift-25)
	hi := sort.SearchFloat64s(x, SiShift-15)
	if hi <= lo {
		return 0, false
	}
	base := median(y[lo:hi])
	ya, yb, yc := y[best-1]-base, y[best]-base, y[best+1]-base
	if !(ya > 0 && yb > 0 && yc > 0) || yb < 0.5*base+50 {
		return 0, false
	}
	ia, ib, ic := 1/ya, 1/yb, 1/yc
	den := ia - 2*ib + ic
	if !(den > 0) {
		return 0, false
	}
	off := 0.5 * (ia - ic) / den
	pos := x[best] + off*(x[best+1]-x[best-1])/2
	if math.Abs(pos-SiShift) > 3 {
		return 0, false
	}
	return pos, true
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	//lint:ignore S1032 sort.Float64s is slices.Sort since Go 1.22: the float64 instantiation of the generic sort this avoids (docs/FOOTPRINT.md, ninth round)
	sort.Sort(sort.Float64Slice(s))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / math.Max(1, float64(len(v)))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func clamp01(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return math.Min(v, 1)
}

var errSingular = errors.New("robust: singular system")
