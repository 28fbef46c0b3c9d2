package analysis

import (
	"fmt"
	"math"
	"sort"
)

// Graphene is graphene (on copper, or transferred), read from its D, G and
// 2D bands at 532 nm (graphene.go).
const Graphene Material = "graphene"

// The graphene analysis (AnalyzeGraphene), 532 nm. Band regions, cm⁻¹:
// D 1320–1385, G 1560–1610, 2D 2640–2740 (published: D ≈ 1350, G ≈ 1580,
// 2D ≈ 2680–2700; Ferrari et al., PRL 97, 187401 (2006); Malard et al.,
// Phys. Rep. 473, 51 (2009)). Each band is read on its own straight local
// baseline through the medians of two flanking regions, after a 5-point
// running median (cosmic-ray spikes of one or two pixels vanish) and a
// 5-point running mean: its height, its position (the parabola through the
// top three points) and its full width at half maximum (interpolated).
const (
	grWindowLo = 1200.0 // the spectrum must cover this ..
	grWindowHi = 2900.0 // .. to this
	grGLo      = 1560.0
	grGHi      = 1610.0
	grDLo      = 1320.0
	grDHi      = 1385.0
	gr2DLo     = 2640.0
	gr2DHi     = 2740.0
)

// The layer classes of graphene from the 2D band: a monolayer's 2D is one
// sharp Lorentzian (FWHM ≈ 30 cm⁻¹) about twice as high as G or more; an AB
// bilayer's is four components reading as one band ≈ 50 cm⁻¹ wide, about as
// high as G; from three layers on ("few") the 2D is lower than G and wider
// still. A film of monolayer and bilayer areas (bilayer islands) reads in
// between, and the count named is the one covering most of the film: read
// from the 2D band's decomposition (graphene2d.go, GrapheneBilayerShareMid)
// whenever the 2D band is fitted, from the 2D/G height ratio otherwise.
const (
	// GrapheneMonoMinRatio is the 2D/G height ratio (smoothed readings)
	// above which the film is mostly monolayer, when the 2D band could not
	// be decomposed.
	GrapheneMonoMinRatio = 1.36
	// GrapheneFewMaxRatio is the 2D/G height ratio below which it is few-layer
	// (three or more), when the 2D is also wider than GrapheneFewMinWidth.
	GrapheneFewMaxRatio = 0.6
	GrapheneFewMinWidth = 60.0
	// GrapheneFewLayers is the LayerCount a few-layer film reports.
	GrapheneFewLayers = 3
)

// Defect classes by D/G height ratio: below 0.1 low (large domains, few
// defects), to 0.5 moderate, above high (nanocrystalline, or damaged).
const (
	GrapheneDefectLowMax      = 0.1
	GrapheneDefectModerateMax = 0.5
)

// GrapheneBands is what the analysis read from a graphene spectrum.
type GrapheneBands struct {
	G      BandReading `json:"g"`
	TwoD   BandReading `json:"2d"`
	D      BandReading `json:"d"`
	DFound bool        `json:"d_found"`
	// TwoDOverG is the 2D/G height ratio, with its standard error.
	TwoDOverG    float64 `json:"2d_over_g"`
	TwoDOverGErr float64 `json:"2d_over_g_err"`
	// BilayerShare is the AB bilayer's share of the 2D band's fitted area
	// (graphene2d.go), with its standard error: the layer count is read
	// from it (GrapheneBilayerShareMid).
	BilayerShare    float64 `json:"bilayer_share"`
	BilayerShareErr float64 `json:"bilayer_share_err"`
	// Layers is "1", "2" or "few"; LayerConfidence in [0, 1].
	Layers          string  `json:"layers"`
	LayerConfidence float64 `json:"layer_confidence"`
	// DOverG is the defect figure, the D/G height ratio (0 when no D band
	// stands above the noise: then at most DOverGErr·DetectSNR), with its
	// standard error, its class (low, moderate, high) and the confidence
	// that the ratio lies in that class.
	DOverG           float64 `json:"d_over_g"`
	DOverGErr        float64 `json:"d_over_g_err"`
	Defects          string  `json:"defects"`
	DefectConfidence float64 `json:"defect_confidence"`
}

// BandReading is one band read on its local baseline: position and full
// width at half maximum (cm⁻¹) and height above the baseline (counts),
// each with a standard error.
type BandReading struct {
	Position    float64 `json:"position_cm1"`
	PositionErr float64 `json:"position_err_cm1"`
	FWHM        float64 `json:"fwhm_cm1"`
	FWHMErr     float64 `json:"fwhm_err_cm1"`
	Height      float64 `json:"height"`
	HeightErr   float64 `json:"height_err"`
}

// AnalyzeGraphene reads a graphene spectrum (shift[i], counts[i] in any
// order): the layer class from the 2D/G ratio and the 2D width, the defect
// figure from D/G, each with a confidence. A spectrum with no G band above
// opts.DetectSNR noise levels is a Result with Found false and the reason
// "no graphene detected" (nothing grew, or the spot is off the film), not
// an error. It returns ErrNoData when the spectrum does not cover
// 1200–2900 cm⁻¹ with enough finite points.
//
// In the Result: Material Graphene, LayerCount 1, 2 or GrapheneFewLayers
// ("few"), Confidence the layer confidence times the G band's detection
// strength, SNR the G band's, Noise, Points, and Graphene with every band
// read; the two-peak fields of the TMD analysis (E2g, A1g, Distance,
// Baseline) stay zero.
func AnalyzeGraphene(shift, counts []float64, opts Opts) (Result, error) {
	if opts.DetectSNR <= 0 || !finite(opts.DetectSNR) {
		opts.DetectSNR = DefaultOpts().DetectSNR
	}
	if len(shift) != len(counts) {
		return Result{}, fmt.Errorf("%w: %d shifts for %d counts", ErrNoData, len(shift), len(counts))
	}
	xs, ys := sortedFinite(shift, counts)
	n := len(xs)
	if n < 2*minPts || xs[0] > grWindowLo || xs[n-1] < grWindowHi {
		lo, hi := 0.0, 0.0
		if n > 0 {
			lo, hi = xs[0], xs[n-1]
		}
		return Result{}, fmt.Errorf("%w: the graphene analysis needs %g–%g cm⁻¹, the spectrum has %d finite points over %g–%g cm⁻¹",
			ErrNoData, grWindowLo, grWindowHi, n, lo, hi)
	}
	sm := smooth5(ys)
	noise := noiseOf2(ys)
	// The smoothed series' noise: a 5-point median then mean of white noise.
	hErr := noise / math.Sqrt(5) * 1.2
	r := Result{Material: Graphene, Noise: noise, Points: n}

	base := polyBaseline(xs, sm)
	if base == nil {
		return Result{}, fmt.Errorf("%w: too few points in the band-free regions %v cm⁻¹", ErrNoData, grFree)
	}
	g, gok := readBand(xs, sm, grGLo, grGHi, localBase(xs, sm, base, [2]float64{1500, 1530}, [2]float64{1645, 1675}), hErr)
	if !gok || g.Height < opts.DetectSNR*hErr {
		r.Material = ""
		r.Reason = fmt.Sprintf("no graphene detected: no G band (%g–%g cm⁻¹) above the noise", grGLo, grGHi)
		return r, nil
	}
	t, tok := readBand(xs, sm, gr2DLo, gr2DHi, localBase(xs, sm, base, [2]float64{2540, 2580}, [2]float64{2800, 2840}), hErr)
	d, _ := readBand(xs, sm, grDLo, grDHi, localBase(xs, sm, base, [2]float64{1260, 1290}, [2]float64{1415, 1445}), hErr)
	gb := GrapheneBands{G: g, TwoD: t, D: d}
	if !tok || t.Height < opts.DetectSNR*hErr {
		// G without 2D: amorphous or heavily defective carbon, or many layers.
		t.Height = math.Max(t.Height, 0)
		gb.TwoD = t
	}
	gb.TwoDOverG = math.Max(t.Height, 0) / g.Height
	gb.TwoDOverGErr = gb.TwoDOverG * math.Hypot(hErr/math.Max(t.Height, hErr), hErr/g.Height)
	s := gb.TwoDOverGErr
	pMono := normCDF((gb.TwoDOverG - GrapheneMonoMinRatio) / s)
	pFew := normCDF((GrapheneFewMaxRatio - gb.TwoDOverG) / s)
	if t.FWHM < GrapheneFewMinWidth && tok {
		pFew *= normCDF((t.FWHM - GrapheneFewMinWidth) / math.Max(t.FWHMErr, 1))
	}
	// The count from the 2D band's decomposition (graphene2d.go) on the
	// unsmoothed counts, despiked, the detector's clipped points left out.
	// On a clipped spectrum the smoothed readings above are not to be
	// trusted for "few" (a clipped 2D reads low and flat).
	ux, uy := unsaturated(xs, despiked(ys, noise))
	clipped := len(ux) < n
	if td := twoDDecompose(ux, uy); td.ok && (clipped || tok && t.Height >= opts.DetectSNR*hErr) {
		if clipped {
			pFew = 0
		}
		gb.BilayerShare, gb.BilayerShareErr = round4(td.share), round4(td.shareErr)
		pMono = (1 - pFew) * normCDF((GrapheneBilayerShareMid-td.share)/math.Max(td.shareErr, 1e-3))
	}
	pBi := clamp01(1 - pMono - pFew)
	switch {
	case pMono >= pBi && pMono >= pFew:
		gb.Layers, gb.LayerConfidence, r.LayerCount = "1", pMono, 1
	case pBi >= pFew:
		gb.Layers, gb.LayerConfidence, r.LayerCount = "2", pBi, 2
	default:
		gb.Layers, gb.LayerConfidence, r.LayerCount = "few", pFew, GrapheneFewLayers
	}
	gb.LayerConfidence = round4(gb.LayerConfidence)

	gb.DFound = d.Height >= opts.DetectSNR*hErr
	gb.DOverG = math.Max(d.Height, 0) / g.Height
	gb.DOverGErr = math.Hypot(hErr/g.Height, gb.DOverG*hErr/g.Height)
	ds := gb.DOverGErr
	switch {
	case gb.DOverG < GrapheneDefectLowMax:
		gb.Defects = "low"
		gb.DefectConfidence = normCDF((GrapheneDefectLowMax - gb.DOverG) / ds)
	case gb.DOverG < GrapheneDefectModerateMax:
		gb.Defects = "moderate"
		gb.DefectConfidence = normCDF((GrapheneDefectModerateMax-gb.DOverG)/ds) - normCDF((GrapheneDefectLowMax-gb.DOverG)/ds)
	default:
		gb.Defects = "high"
		gb.DefectConfidence = normCDF((gb.DOverG - GrapheneDefectModerateMax) / ds)
	}
	gb.DefectConfidence = round4(clamp01(gb.DefectConfidence))

	r.Found = true
	r.RSquared, r.FitResidual = bandModelFit(xs, ys, base, []BandReading{d, g, t})
	r.SNR = g.Height / hErr
	r.Confidence = round4(clamp01(gb.LayerConfidence * detection(r.SNR, opts.DetectSNR)))
	r.Graphene = &gb
	return r, nil
}

// bandModelFit is how well the bands read explain the spectrum: R² and the
// RMS residual relative to the strongest band, of the baseline plus one
// Lorentzian per band (its position, height and FWHM as read) over the
// points from the D band's flank to the 2D band's (1250–2850 cm⁻¹). A
// bilayer's 2D, four components, is not quite one Lorentzian: R² stays
// above 0.97 on the simulator's spectra without artefacts.
func bandModelFit(xs, ys []float64, base func(float64) float64, bands []BandReading) (r2, rel float64) {
	var ssr, sum, sum2 float64
	n, top := 0, 0.0
	for _, b := range bands {
		top = math.Max(top, b.Height)
	}
	for i, x := range xs {
		if x < 1250 || x > 2850 {
			continue
		}
		m := base(x)
		for _, b := range bands {
			if b.Height > 0 && b.FWHM > 0 {
				m += b.Height * lorentz(x, b.Position, b.FWHM/2)
			}
		}
		d := ys[i] - m
		ssr += d * d
		sum += ys[i]
		sum2 += ys[i] * ys[i]
		n++
	}
	if n == 0 || !(top > 0) {
		return 0, 0
	}
	sst := sum2 - sum*sum/float64(n)
	if sst > 0 {
		r2 = clamp01(1 - ssr/sst)
	}
	return round4(r2), round4(math.Sqrt(ssr/float64(n)) / top)
}

// sortedFinite is the finite points sorted by shift, duplicates averaged.
func sortedFinite(shift, counts []float64) (xs, ys []float64) {
	type pt struct{ x, y float64 }
	pts := make([]pt, 0, len(shift))
	for i := range shift {
		if x, y := shift[i], counts[i]; finite(x) && finite(y) && math.Abs(y) < 1e15 {
			pts = append(pts, pt{x, y})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	for i := 0; i < len(pts); {
		j, sum := i, 0.0
		for j < len(pts) && pts[j].x == pts[i].x {
			sum += pts[j].y
			j++
		}
		xs, ys = append(xs, pts[i].x), append(ys, sum/float64(j-i))
		i = j
	}
	return xs, ys
}

// smooth5 is a 5-point running median followed by a 5-point running mean.
func smooth5(ys []float64) []float64 {
	n := len(ys)
	med := make([]float64, n)
	for i := range ys {
		lo, hi := max(0, i-2), min(n-1, i+2)
		med[i] = median(ys[lo : hi+1])
	}
	out := make([]float64, n)
	for i := range med {
		lo, hi := max(0, i-2), min(n-1, i+2)
		s := 0.0
		for k := lo; k <= hi; k++ {
			s += med[k]
		}
		out[i] = s / float64(hi-lo+1)
	}
	return out
}

// noiseOf2 is the noise of ys, counts: the median absolute second
// difference scaled to a standard deviation (analyzeIn's estimate).
func noiseOf2(ys []float64) float64 {
	var d2 []float64
	for i := 1; i+1 < len(ys); i++ {
		d2 = append(d2, math.Abs(ys[i]-(ys[i-1]+ys[i+1])/2))
	}
	noise := median(d2) / 0.6745 / math.Sqrt(1.5)
	if !(noise > 0) {
		noise = 1e-9 * math.Max(1, maxAbs(ys))
	}
	return noise
}

// grFree are the band-free regions the baseline is fitted on, cm⁻¹.
var grFree = [][2]float64{{1100, 1290}, {1420, 1530}, {1650, 2560}, {2840, 3000}}

// polyBaseline is a least-squares polynomial of degree 4 in u = the shift
// scaled to [−1, 1] over xs, fitted to sm in the band-free regions: the
// smooth background (the copper's photoluminescence, the detector's offset)
// under the bands, curved as it is. nil when too few points are free.
func polyBaseline(xs, sm []float64) func(x float64) float64 {
	const deg = 4
	x0, x1 := xs[0], xs[len(xs)-1]
	u := func(x float64) float64 { return 2*(x-x0)/(x1-x0) - 1 }
	var a [deg + 1][deg + 2]float64
	pts := 0
	for i, x := range xs {
		free := false
		for _, r := range grFree {
			free = free || (x >= r[0] && x <= r[1])
		}
		if !free {
			continue
		}
		pts++
		var pw [deg + 1]float64
		pw[0] = 1
		for k := 1; k <= deg; k++ {
			pw[k] = pw[k-1] * u(x)
		}
		for r := 0; r <= deg; r++ {
			for c := 0; c <= deg; c++ {
				a[r][c] += pw[r] * pw[c]
			}
			a[r][deg+1] += pw[r] * sm[i]
		}
	}
	if pts < 4*(deg+1) {
		return nil
	}
	for c := 0; c <= deg; c++ { // Gauss–Jordan with partial pivoting
		p := c
		for r := c + 1; r <= deg; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		a[c], a[p] = a[p], a[c]
		if math.Abs(a[c][c]) < 1e-300 {
			return nil
		}
		for r := 0; r <= deg; r++ {
			if r != c {
				f := a[r][c] / a[c][c]
				for k := c; k <= deg+1; k++ {
					a[r][k] -= f * a[c][k]
				}
			}
		}
	}
	var coef [deg + 1]float64
	for k := range coef {
		coef[k] = a[k][deg+1] / a[k][k]
	}
	return func(x float64) float64 {
		v, t := 0.0, u(x)
		for k := deg; k >= 0; k-- {
			v = v*t + coef[k]
		}
		return v
	}
}

// localBase is base corrected, around one band, by the straight line
// through the medians of what sm leaves above base in the flanking regions
// left and right: the global polynomial follows the background's shape,
// the local line takes out what it leaves under the band.
func localBase(xs, sm []float64, base func(float64) float64, left, right [2]float64) func(float64) float64 {
	var lx, ly, rx, ry []float64
	for i, x := range xs {
		switch {
		case x >= left[0] && x <= left[1]:
			lx, ly = append(lx, x), append(ly, sm[i]-base(x))
		case x >= right[0] && x <= right[1]:
			rx, ry = append(rx, x), append(ry, sm[i]-base(x))
		}
	}
	if len(lx) == 0 || len(rx) == 0 {
		return base
	}
	x1, y1, x2, y2 := median(lx), median(ly), median(rx), median(ry)
	return func(x float64) float64 { return base(x) + y1 + (y2-y1)*(x-x1)/(x2-x1) }
}

// topParabola fits a parabola, least squares, to the band's top: the
// points around best standing above 0.6 of its height h (at most 12 on
// either side, at least 2). A broad band's many near-top points and a
// narrow band's few are read alike (the highest point alone is biased up by
// the noise, more on a broad flat top). ok is false when the fit opens
// upward or its vertex leaves the points fitted.
func topParabola(xs, sm []float64, base func(float64) float64, best int, h float64) (pos, top float64, ok bool) {
	if !(h > 0) {
		return 0, 0, false
	}
	lo, hi := best, best
	for lo > 0 && best-lo < 12 && sm[lo-1]-base(xs[lo-1]) > 0.6*h {
		lo--
	}
	for hi+1 < len(xs) && hi-best < 12 && sm[hi+1]-base(xs[hi+1]) > 0.6*h {
		hi++
	}
	lo, hi = max(0, min(lo, best-2)), min(len(xs)-1, max(hi, best+2))
	var s [5]float64 // Σ t^k, k = 0..4
	var r [3]float64 // Σ y t^k, k = 0..2
	for i := lo; i <= hi; i++ {
		t, y := xs[i]-xs[best], sm[i]-base(xs[i])
		tk := 1.0
		for k := 0; k < 5; k++ {
			s[k] += tk
			if k < 3 {
				r[k] += y * tk
			}
			tk *= t
		}
	}
	m := [3][3]float64{{s[0], s[1], s[2]}, {s[1], s[2], s[3]}, {s[2], s[3], s[4]}}
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	d := det(m)
	if math.Abs(d) < 1e-300 {
		return 0, 0, false
	}
	var c [3]float64 // Cramer's rule
	for k := range c {
		mk := m
		for row := range mk {
			mk[row][k] = r[row]
		}
		c[k] = det(mk) / d
	}
	if !(c[2] < 0) {
		return 0, 0, false
	}
	v := -c[1] / (2 * c[2])
	if v < xs[lo]-xs[best] || v > xs[hi]-xs[best] {
		return 0, 0, false
	}
	return xs[best] + v, c[0] - c[1]*c[1]/(4*c[2]), true
}

// readBand reads the highest band in lo..hi of the smoothed sm above the
// baseline base; hErr is the smoothed series' noise. ok is false when the
// band region holds no point.
func readBand(xs, sm []float64, lo, hi float64, base func(float64) float64, hErr float64) (BandReading, bool) {
	best := -1
	for i, x := range xs {
		if x >= lo && x <= hi && (best < 0 || sm[i]-base(x) > sm[best]-base(xs[best])) {
			best = i
		}
	}
	if best < 0 {
		return BandReading{}, false
	}
	h := sm[best] - base(xs[best])
	b := BandReading{Position: xs[best], Height: h, HeightErr: hErr}
	if pos, top, ok := topParabola(xs, sm, base, best, h); ok {
		b.Position, b.Height, h = pos, top, top
	}
	if !(h > 0) {
		return b, true
	}
	half := h / 2
	cross := func(dir int) float64 {
		for i := best; i+dir >= 0 && i+dir < len(xs); i += dir {
			y0, y1 := sm[i]-base(xs[i]), sm[i+dir]-base(xs[i+dir])
			if y1 <= half {
				return xs[i] + (xs[i+dir]-xs[i])*(y0-half)/(y0-y1)
			}
		}
		return xs[best]
	}
	b.FWHM = cross(1) - cross(-1)
	b.FWHMErr = math.Sqrt2 * hErr * math.Max(b.FWHM, 1) / h
	b.PositionErr = b.FWHMErr / 2
	return b, true
}
