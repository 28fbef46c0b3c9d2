package analysis

import (
	"fmt"
	"math"
	"sort"
)

// residualBands returns the heights (counts) of o's two bands in what r's
// fit leaves of the spectrum (the points minus r.Model, 5-point moving
// average, highest point in each of o's published ranges), and whether both
// stand at least DetectSNR noise levels above zero: then the spectrum holds
// o's bands beside r's.
func residualBands(r Result, o *profile, shift, counts []float64, opts Opts) (e2g, a1g float64, present bool) {
	height := func(band [2]float64) float64 {
		type pt struct{ x, y float64 }
		var pts []pt
		for i := range shift {
			x, y := shift[i], counts[i]
			if finite(x) && finite(y) && x >= band[0]-1 && x <= band[1]+1 {
				pts = append(pts, pt{x, y - r.Model(x)})
			}
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		best := math.Inf(-1)
		for i := range pts {
			if pts[i].x < band[0] || pts[i].x > band[1] {
				continue
			}
			lo, hi := max(0, i-2), min(len(pts)-1, i+2)
			s := 0.0
			for k := lo; k <= hi; k++ {
				s += pts[k].y
			}
			best = math.Max(best, s/float64(hi-lo+1))
		}
		return best
	}
	e2g, a1g = height(o.e2gBand), height(o.a1gBand)
	min := opts.DetectSNR * r.Noise
	return e2g, a1g, e2g >= min && a1g >= min
}

// ambiguous lowers r, which named one material, to what a spectrum holding
// the bands of two deserves: the confidence scaled by how much weaker the
// other material's bands are (other/named in [0,1], 1 when as strong) and
// capped at AmbiguousMaxConfidence, and a Reason that says so.
func ambiguous(r Result, other Material, otherSNR, ratio float64) Result {
	r.Confidence = math.Min(clamp01(r.Confidence*(1-clamp01(ratio))), AmbiguousMaxConfidence)
	r.Reason = fmt.Sprintf("ambiguous: both %s (SNR %.0f) and %s (SNR %.0f) bands are present, a film of both or a mixed spectrum; named the stronger with low confidence",
		r.Material, r.SNR, other, otherSNR)
	return r
}
