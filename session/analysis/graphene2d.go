package analysis

import "math"

// The 2D band's decomposition (twoDDecompose): the band is fitted, least
// squares on the unsmoothed counts, as the sum of the two line shapes a
// film of monolayer and AB-bilayer areas shows (Ferrari et al., PRL 97,
// 187401 (2006); Malard et al., PRB 76, 201401 (2007) and Phys. Rep. 473,
// 51 (2009)), on a quadratic local baseline:
//
//   - the monolayer's one Lorentzian, FWHM gr2DMonoFWHM, at p;
//   - the AB bilayer's four (2D1B, 2D1A, 2D2A, 2D2B), each FWHM
//     gr2DBiFWHM, at p + grBi2D[k][0] with heights grBi2D[k][1] relative
//     to the strongest (the inner two dominate).
//
// p (the 2D position) is searched over 2650–2720 cm⁻¹; the two amplitudes
// and the baseline are linear. The bilayer share of the 2D band's area
// (BilayerShare) grows with the bilayer fraction of the covered film, and
// the layer count is read from it (GrapheneBilayerShareMid), not from the
// height of a band that is the sum of both shapes.
const (
	gr2DMonoFWHM = 30.0
	gr2DBiFWHM   = 24.0
	gr2DFitLo    = 2580.0
	gr2DFitHi    = 2800.0
)

// grBi2D are the AB bilayer's 2D components at 532 nm: offset from the
// monolayer's 2D position (cm⁻¹) and relative height.
var grBi2D = [4][2]float64{{-26, 0.2}, {0, 0.7}, {19, 1}, {38, 0.2}}

// GrapheneBilayerShareMid is the bilayer share of the 2D band's fitted
// area at which half of the covered film is bilayer: above it the film is
// mostly bilayer. It holds the ratio of the two line shapes' cross
// sections per unit area, which the literature leaves to each instrument
// and substrate; it was calibrated on simulated spectra of seeds disjoint
// from those the accuracy is measured on (TestGrapheneCalibrate).
const GrapheneBilayerShareMid = 0.537

// twoDFit is the 2D band's decomposition.
type twoDFit struct {
	pos             float64 // the monolayer's 2D position, cm⁻¹
	mono, bi        float64 // areas, counts·cm⁻¹
	share, shareErr float64 // bilayer share of the area, its standard error
	height, fwhm    float64 // of the fitted band (both shapes)
	ok              bool
}

// grMono and grBi are the unit-height line shapes at 2D position p.
func grMono(x, p float64) float64 { return lorentz(x, p, gr2DMonoFWHM/2) }

func grBi(x, p float64) float64 {
	v := 0.0
	for _, c := range grBi2D {
		v += c[1] * lorentz(x, p+c[0], gr2DBiFWHM/2)
	}
	return v
}

// linFit is a linear least-squares fit of ys on k basis functions.
type linFit struct {
	coef [nParams]float64
	cov  [nParams][nParams]float64
	ssr  float64
	ok   bool
}

// fitLinear fits ys over the points xs in [lo, hi] on k ≤ nParams basis
// functions (basis fills row[0..k-1] at x): the coefficients, their
// covariance (from the residual variance) and the residual sum of squares.
func fitLinear(xs, ys []float64, lo, hi float64, k int, basis func(x float64, row *[nParams]float64)) linFit {
	var a [nParams][nParams]float64
	var b [nParams]float64
	var row [nParams]float64
	n := 0
	for i, x := range xs {
		if x < lo || x > hi {
			continue
		}
		basis(x, &row)
		for r := 0; r < k; r++ {
			for c := 0; c < k; c++ {
				a[r][c] += row[r] * row[c]
			}
			b[r] += row[r] * ys[i]
		}
		n++
	}
	if n <= k+2 {
		return linFit{}
	}
	for r := k; r < nParams; r++ { // the unused parameters: identity
		a[r][r] = 1
	}
	coef, err := solve(a, b)
	if err != nil {
		return linFit{}
	}
	f := linFit{coef: coef, ok: true}
	for i, x := range xs {
		if x < lo || x > hi {
			continue
		}
		basis(x, &row)
		m := 0.0
		for r := 0; r < k; r++ {
			m += coef[r] * row[r]
		}
		f.ssr += (ys[i] - m) * (ys[i] - m)
	}
	inv, err := invert(a)
	if err != nil {
		return linFit{}
	}
	s2 := f.ssr / float64(n-k)
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			f.cov[r][c] = s2 * inv[r][c]
		}
	}
	return f
}

// twoDDecompose fits the 2D band of (xs, ys), the despiked counts with
// the saturated points left out.
func twoDDecompose(xs, ys []float64) twoDFit {
	const xc = (gr2DFitLo + gr2DFitHi) / 2
	at := func(p float64) linFit {
		return fitLinear(xs, ys, gr2DFitLo, gr2DFitHi, 5, func(x float64, row *[nParams]float64) {
			u := (x - xc) / 100
			row[0], row[1], row[2], row[3], row[4] = 1, u, u*u, grMono(x, p), grBi(x, p)
		})
	}
	// The position: the best of a 1 cm⁻¹ grid, then the parabola through
	// it and its neighbours.
	best, bp := linFit{}, 0.0
	ssr := map[float64]float64{}
	for p := 2650.0; p <= 2720; p++ {
		f := at(p)
		if !f.ok {
			continue
		}
		ssr[p] = f.ssr
		if !best.ok || f.ssr < best.ssr {
			best, bp = f, p
		}
	}
	if !best.ok {
		return twoDFit{}
	}
	if l, lok := ssr[bp-1]; lok {
		if r, rok := ssr[bp+1]; rok && l+r-2*ssr[bp] > 0 {
			p := bp + 0.5*(l-r)/(l+r-2*ssr[bp])
			if f := at(p); f.ok && f.ssr <= best.ssr {
				best, bp = f, p
			}
		}
	}
	// Areas: a Lorentzian of height 1 and FWHM w has area πw/2.
	am := math.Pi * gr2DMonoFWHM / 2
	ab := 0.0
	for _, c := range grBi2D {
		ab += c[1] * math.Pi * gr2DBiFWHM / 2
	}
	m, b := best.coef[3], best.coef[4]
	t := twoDFit{pos: bp, mono: m * am, bi: b * ab, ok: true}
	tot := t.mono + t.bi
	if !(tot > 0) {
		return twoDFit{pos: bp}
	}
	t.share = t.bi / tot
	// The share's standard error from the amplitudes' covariance: ∂s/∂m =
	// −am·bi/tot², ∂s/∂b = ab·mono/tot².
	dm, db := -am*t.bi/(tot*tot), ab*t.mono/(tot*tot)
	v := dm*dm*best.cov[3][3] + db*db*best.cov[4][4] + 2*dm*db*best.cov[3][4]
	t.shareErr = math.Sqrt(math.Max(v, 0))
	// The fitted band's height and FWHM, on a 0.5 cm⁻¹ grid.
	band := func(x float64) float64 { return m*grMono(x, bp) + b*grBi(x, bp) }
	top, xt := 0.0, bp
	for x := bp - 40; x <= bp+60; x += 0.5 {
		if v := band(x); v > top {
			top, xt = v, x
		}
	}
	t.height = top
	if top > 0 {
		lo, hi := xt, xt
		for lo > xt-150 && band(lo) > top/2 {
			lo -= 0.5
		}
		for hi < xt+150 && band(hi) > top/2 {
			hi += 0.5
		}
		t.fwhm = hi - lo
	}
	return t
}

// despiked is ys with the cosmic-ray spikes replaced: a point more than
// 8 noise levels above the 5-point running median of its neighbourhood
// takes the median's value (a band's top stands less above it).
func despiked(ys []float64, noise float64) []float64 {
	out := make([]float64, len(ys))
	for i, y := range ys {
		lo, hi := max(0, i-2), min(len(ys)-1, i+2)
		if m := median(ys[lo : hi+1]); y-m > 8*noise {
			y = m
		}
		out[i] = y
	}
	return out
}

// unsaturated is the points of (xs, ys) below the detector's full well:
// when the highest count is read at three points or more, those points
// are clipped and left out.
func unsaturated(xs, ys []float64) (ox, oy []float64) {
	top, at := math.Inf(-1), 0
	for _, y := range ys {
		switch {
		case y > top:
			top, at = y, 1
		case y == top:
			at++
		}
	}
	if at < 3 {
		return xs, ys
	}
	for i, y := range ys {
		if y < top {
			ox, oy = append(ox, xs[i]), append(oy, ys[i])
		}
	}
	return ox, oy
}
