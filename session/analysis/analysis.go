package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"hcp-edge/device"
)

// Sentinel errors of the package.
var (
	// ErrNoData: the spectrum has too few finite points in the analysis
	// window to say anything (empty, all NaN, wrong range, mismatched
	// lengths). A spectrum that simply shows no MoS2 is not an error: its
	// Result has Found false.
	ErrNoData = errors.New("analysis: spectrum unusable")
)

// The MoS2 analysis window, cm⁻¹ (WindowFor gives each material's).
const (
	WindowLo = 350.0
	WindowHi = 440.0
	e2gLo    = 375.0
	e2gHi    = 392.0
	a1gLo    = 398.0
	a1gHi    = 416.0
	edgeW    = 15.0 // width of each baseline edge region
	minPts   = 40   // finite points the window needs
)

// Opts tunes Analyze.
type Opts struct {
	// DetectSNR is the height above the baseline, in noise levels, a peak
	// needs to count as present.
	DetectSNR float64
}

// DefaultOpts returns DetectSNR 6.
func DefaultOpts() Opts { return Opts{DetectSNR: 6} }

// Peak is one fitted Lorentzian. Errors are one standard deviation.
type Peak struct {
	Position     float64 `json:"position_cm1"`
	PositionErr  float64 `json:"position_err_cm1"`
	FWHM         float64 `json:"fwhm_cm1"`
	FWHMErr      float64 `json:"fwhm_err_cm1"`
	Amplitude    float64 `json:"amplitude"`
	AmplitudeErr float64 `json:"amplitude_err"`
}

// Result is the analysis of one spectrum.
type Result struct {
	// Found is false when the E2g or A1g peak is absent ("no MoS2 found");
	// Reason says which. The other fields are then zero.
	Found  bool   `json:"found"`
	Reason string `json:"reason,omitempty"`
	// Material names the material whose bands were fitted, "MoS2" or "WS2",
	// when AnalyzeFor or AnalyzeMaterial found them. Analyze and AnalyzeWith,
	// the MoS2-only entry points that predate it, leave it empty (and so
	// their JSON unchanged): there it means MoS2.
	Material Material `json:"material,omitempty"`

	E2g         Peak    `json:"e2g"`
	A1g         Peak    `json:"a1g"`
	Distance    float64 `json:"peak_distance"`     // A1g − E2g, cm⁻¹
	DistanceErr float64 `json:"peak_distance_err"` // one standard deviation
	// LayerCount is 1, 2 or 3, or 4 meaning bulk (four or more, Bulk true);
	// 0 when the distance lies outside every band.
	LayerCount int     `json:"layer_count"`
	Bulk       bool    `json:"bulk"`
	Confidence float64 `json:"confidence"` // in [0,1]

	// Baseline is the fitted linear baseline (zero when Found is false).
	Baseline Baseline `json:"baseline"`

	RSquared    float64 `json:"r_squared"`    // of the fit over the window
	FitResidual float64 `json:"fit_residual"` // RMS residual / strongest peak amplitude
	Noise       float64 `json:"noise"`        // estimated noise level, counts
	SNR         float64 `json:"snr"`          // weaker peak amplitude / noise
	Points      int     `json:"points"`       // points fitted

	// Graphene holds the bands of a graphene analysis (AnalyzeGraphene):
	// D, G and 2D, the layer class and the defect figure; nil for the
	// other materials.
	Graphene *GrapheneBands `json:"graphene,omitempty"`
}

// Baseline is the fitted straight baseline y = Offset + Slope·(x − Center).
type Baseline struct {
	Center float64 `json:"center_cm1"`
	Offset float64 `json:"offset"`
	Slope  float64 `json:"slope_per_cm1"`
}

// At is the baseline at shift x (cm⁻¹).
func (b Baseline) At(x float64) float64 { return b.Offset + b.Slope*(x-b.Center) }

// At is the peak's fitted Lorentzian at shift x (cm⁻¹), above the baseline.
func (p Peak) At(x float64) float64 {
	if !(p.FWHM > 0) {
		return 0
	}
	return p.Amplitude * lorentz(x, p.Position, p.FWHM/2)
}

// Model is the fitted model at shift x: baseline plus both peaks. It is
// meaningful only when Found is true.
func (r Result) Model(x float64) float64 { return r.Baseline.At(x) + r.E2g.At(x) + r.A1g.At(x) }

// Band is the distance range of one layer class.
type Band struct {
	Layers         int // 4 = bulk
	Lo, Hi         float64
	CoreLo, CoreHi float64
}

// bands is the MoS2 distance-to-layer mapping (see the package doc).
var bands = [...]Band{
	{Layers: 1, Lo: 17.0, Hi: 20.2, CoreLo: 18.5, CoreHi: 19.5},
	{Layers: 2, Lo: 20.2, Hi: 22.4, CoreLo: 21.0, CoreHi: 22.0},
	{Layers: 3, Lo: 22.4, Hi: 24.0, CoreLo: 22.7, CoreHi: 23.3},
	{Layers: 4, Lo: 24.0, Hi: 26.5, CoreLo: 24.5, CoreHi: 25.5},
}

// Bands returns the MoS2 distance bands of the layer classes, thinnest first
// (BandsFor gives each material's).
func Bands() []Band { return slices.Clone(bands[:]) }

// Classify maps an MoS2 A1g−E2g distance (cm⁻¹) with its uncertainty to a
// layer count (4 = bulk; 0 = outside every band) and the position ×
// certainty part of the confidence (ClassifyFor does it for each material).
func Classify(distance, sigma float64) (layers int, bulk bool, conf float64) {
	return classifyIn(bands[:], distance, sigma)
}

// classifyIn is Classify over a material's bands.
func classifyIn(bands []Band, distance, sigma float64) (layers int, bulk bool, conf float64) {
	if !finite(distance) {
		return 0, false, 0
	}
	for _, b := range bands {
		last := b.Layers == 4
		if distance < b.Lo || distance > b.Hi || (distance == b.Hi && !last) {
			continue
		}
		pos := 1.0
		switch {
		case distance < b.CoreLo:
			pos = 1 - 0.5*(b.CoreLo-distance)/(b.CoreLo-b.Lo)
		case distance > b.CoreHi:
			pos = 1 - 0.5*(distance-b.CoreHi)/(b.Hi-b.CoreHi)
		}
		cert := 1.0
		if sigma > 0 && finite(sigma) {
			cert = normCDF((b.Hi-distance)/sigma) - normCDF((b.Lo-distance)/sigma)
		}
		return b.Layers, last, clamp01(pos * cert)
	}
	return 0, false, 0
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func clamp01(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return math.Min(v, 1)
}

// Analyze analyses a spectrum with DefaultOpts.
func Analyze(s device.Spectrum) (Result, error) { return AnalyzeWith(s.Shift, s.Counts, DefaultOpts()) }

// AnalyzeWith analyses the points (shift[i], counts[i]) in any order as a
// spectrum of MoS2; non-finite points are dropped. It returns ErrNoData when
// the window holds too few points, and a Result with Found false when the
// peaks are absent.
func AnalyzeWith(shift, counts []float64, opts Opts) (Result, error) {
	return analyzeIn(&mos2Profile, shift, counts, opts)
}

// analyzeIn is the analysis of the package doc in pr's window, with pr's
// detection regions and layer bands. It leaves Result.Material empty.
func analyzeIn(pr *profile, shift, counts []float64, opts Opts) (Result, error) {
	if opts.DetectSNR <= 0 || !finite(opts.DetectSNR) {
		opts.DetectSNR = DefaultOpts().DetectSNR
	}
	if len(shift) != len(counts) {
		return Result{}, fmt.Errorf("%w: %d shifts for %d counts", ErrNoData, len(shift), len(counts))
	}
	type pt struct{ x, y float64 }
	pts := make([]pt, 0, len(shift))
	for i := range shift {
		x, y := shift[i], counts[i]
		if finite(x) && finite(y) && x >= pr.windowLo && x <= pr.windowHi && math.Abs(y) < 1e15 {
			pts = append(pts, pt{x, y})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	// Duplicated shifts: keep their mean.
	xs, ys := make([]float64, 0, len(pts)), make([]float64, 0, len(pts))
	for i := 0; i < len(pts); {
		j, sum := i, 0.0
		for j < len(pts) && pts[j].x == pts[i].x {
			sum += pts[j].y
			j++
		}
		xs = append(xs, pts[i].x)
		ys = append(ys, sum/float64(j-i))
		i = j
	}
	if len(xs) < minPts || xs[len(xs)-1]-xs[0] < 0.6*(pr.windowHi-pr.windowLo) {
		return Result{}, fmt.Errorf("%w: %d finite points in %g–%g cm⁻¹", ErrNoData, len(xs), pr.windowLo, pr.windowHi)
	}
	n := len(xs)

	// Baseline: the line through the medians of the two edge regions.
	var lx, ly, rx, ry []float64
	for i := range xs {
		if xs[i] <= xs[0]+pr.edgeW {
			lx, ly = append(lx, xs[i]), append(ly, ys[i])
		}
		if xs[i] >= xs[n-1]-pr.edgeW {
			rx, ry = append(rx, xs[i]), append(ry, ys[i])
		}
	}
	x1, y1, x2, y2 := median(lx), median(ly), median(rx), median(ry)
	xc := (xs[0] + xs[n-1]) / 2
	b1 := 0.0
	if x2 > x1 {
		b1 = (y2 - y1) / (x2 - x1)
	}
	b0 := y1 + b1*(xc-x1)
	corr := make([]float64, n)
	for i := range xs {
		corr[i] = ys[i] - (b0 + b1*(xs[i]-xc))
	}

	// Noise: median absolute second difference, scaled to a standard deviation
	// (var(y[i] − (y[i−1]+y[i+1])/2) = 1.5σ²; MAD/0.6745).
	var d2 []float64
	for i := 1; i+1 < n; i++ {
		d2 = append(d2, math.Abs(ys[i]-(ys[i-1]+ys[i+1])/2))
	}
	noise := median(d2) / 0.6745 / math.Sqrt(1.5)
	if !(noise > 0) {
		noise = 1e-9 * math.Max(1, maxAbs(ys))
	}

	// Detection on a 5-point moving average of the corrected spectrum.
	smooth := make([]float64, n)
	for i := range corr {
		lo, hi := max(0, i-2), min(n-1, i+2)
		s := 0.0
		for k := lo; k <= hi; k++ {
			s += corr[k]
		}
		smooth[i] = s / float64(hi-lo+1)
	}
	peakIn := func(lo, hi float64) (int, bool) {
		best := -1
		for i := range xs {
			if xs[i] >= lo && xs[i] <= hi && (best < 0 || smooth[i] > smooth[best]) {
				best = i
			}
		}
		return best, best >= 0 && smooth[best] >= opts.DetectSNR*noise
	}
	ie, okE := peakIn(pr.e2gLo, pr.e2gHi)
	ia, okA := peakIn(pr.a1gLo, pr.a1gHi)
	switch {
	case !okE && !okA:
		return Result{Reason: "no " + pr.name + " found: neither the E2g nor the A1g peak stands above the noise", Noise: noise, Points: n}, nil
	case !okE:
		return Result{Reason: fmt.Sprintf("no %s found: no E2g peak (%g–%g cm⁻¹) above the noise", pr.name, pr.e2gLo, pr.e2gHi), Noise: noise, Points: n}, nil
	case !okA:
		return Result{Reason: fmt.Sprintf("no %s found: no A1g peak (%g–%g cm⁻¹) above the noise", pr.name, pr.a1gLo, pr.a1gHi), Noise: noise, Points: n}, nil
	}

	p0 := [nParams]float64{b0, b1, smooth[ie], xs[ie], 2, smooth[ia], xs[ia], 2}
	fr, err := lmFit(model{xc: xc}, xs, ys, p0, [2]float64{pr.e2gLo - 3, pr.a1gLo - 3}, [2]float64{pr.e2gHi + 3, pr.a1gHi + 3})
	if err != nil {
		return Result{Reason: "no " + pr.name + " found: the two-peak fit did not converge (" + err.Error() + ")", Noise: noise, Points: n}, nil
	}
	p := fr.p
	sd := func(i int) float64 { return math.Sqrt(math.Max(fr.cov[i][i], 0)) }
	peak := func(k int) Peak {
		return Peak{Position: p[3+3*k], PositionErr: sd(3 + 3*k), FWHM: 2 * p[4+3*k], FWHMErr: 2 * sd(4+3*k),
			Amplitude: p[2+3*k], AmplitudeErr: sd(2 + 3*k)}
	}
	r := Result{Found: true, E2g: peak(0), A1g: peak(1), Noise: noise, Points: n,
		Baseline: Baseline{Center: xc, Offset: p[0], Slope: p[1]}}
	if r.E2g.Amplitude < opts.DetectSNR*noise || r.A1g.Amplitude < opts.DetectSNR*noise ||
		r.E2g.FWHM > 20 || r.A1g.FWHM > 20 || r.A1g.Position <= r.E2g.Position {
		return Result{Reason: fmt.Sprintf("no %s found: the fitted peaks are not %s bands (E2g %.1f cm⁻¹ FWHM %.1f, A1g %.1f cm⁻¹ FWHM %.1f)",
			pr.name, pr.name, r.E2g.Position, r.E2g.FWHM, r.A1g.Position, r.A1g.FWHM), Noise: noise, Points: n}, nil
	}
	r.Distance = r.A1g.Position - r.E2g.Position
	r.DistanceErr = math.Sqrt(math.Max(fr.cov[3][3]+fr.cov[6][6]-2*fr.cov[3][6], 0))

	mean := 0.0
	for _, y := range ys {
		mean += y
	}
	mean /= float64(n)
	sst := 0.0
	for _, y := range ys {
		sst += (y - mean) * (y - mean)
	}
	r.RSquared = 0
	if sst > 0 {
		r.RSquared = clamp01(1 - fr.ssr/sst)
	}
	r.FitResidual = math.Sqrt(fr.ssr/float64(n)) / math.Max(r.E2g.Amplitude, r.A1g.Amplitude)
	r.SNR = math.Min(r.E2g.Amplitude, r.A1g.Amplitude) / noise

	layers, bulk, posConf := classifyIn(pr.bands, r.Distance, r.DistanceErr)
	r.LayerCount, r.Bulk = layers, bulk
	fit := clamp01(1-5*(1-r.RSquared)) * clamp01(1-math.Exp(-r.SNR/8))
	r.Confidence = clamp01(fit * posConf)
	if layers == 0 {
		r.Reason = fmt.Sprintf("peak distance %.2f cm⁻¹ lies outside every layer band", r.Distance)
	}
	return r, nil
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

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
