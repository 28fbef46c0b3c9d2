package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"hcp-edge/device"
)

// Material names what a spectrum is analysed as.
type Material string

// The materials the analysis knows, and Auto: decide from the spectrum.
const (
	MoS2 Material = "MoS2"
	WS2  Material = "WS2"
	Auto Material = "auto"
)

// Unnamed is the material a Result that names none (Result.Material "")
// was analysed as: Analyze and AnalyzeWith, which predate
// Result.Material, fit its bands. Layers above that print a result's
// material take this name rather than naming a material themselves.
const Unnamed = MoS2

// ErrUnknownMaterial: a material the analysis does not know.
var ErrUnknownMaterial = errors.New("analysis: unknown material")

// AmbiguousMaxConfidence caps the confidence of an automatic analysis that
// found the bands of both materials (see the package doc, Materials).
const AmbiguousMaxConfidence = 0.3

// Materials returns the materials the analysis has a model for, in a fixed
// order (MoS2, WS2, Graphene; Auto is none of them). It is the one list the
// layers above take the material names from: raman.analyze's schemas (the
// agent hands it to device/catalog) and a remote model's answer schema
// (session/modelrouter), so that a new material's model is the only Go a
// new material needs.
func Materials() []Material {
	return []Material{MoS2, WS2, Graphene}
}

// MaterialNames is Materials as strings.
func MaterialNames() []string {
	ms := Materials()
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// ParseMaterial returns the material named s, one of Materials or "auto",
// in any case; "" is Auto. Anything else is an error wrapping
// ErrUnknownMaterial.
func ParseMaterial(s string) (Material, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Auto, nil
	}
	for _, m := range append(Materials(), Auto) {
		if strings.EqualFold(t, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: %q (want %s or auto)", ErrUnknownMaterial, s, strings.Join(MaterialNames(), ", "))
}

// BandsFor returns the distance bands of m's layer classes, thinnest first;
// nil for Auto or an unknown material.
func BandsFor(m Material) []Band {
	if p := profileOf(m); p != nil {
		return slices.Clone(p.bands)
	}
	return nil
}

// WindowFor returns the shift range (cm⁻¹) the analysis of m fits over; for
// Auto, the range every material's window lies in. ok is false for an
// unknown material.
func WindowFor(m Material) (lo, hi float64, ok bool) {
	if m == Auto {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, p := range profiles {
			lo, hi = math.Min(lo, p.windowLo), math.Max(hi, p.windowHi)
		}
		return lo, hi, true
	}
	if p := profileOf(m); p != nil {
		return p.windowLo, p.windowHi, true
	}
	if m == Graphene {
		return grWindowLo, grWindowHi, true
	}
	return 0, 0, false
}

// ClassifyFor is Classify for an A1g−E2g distance of material m; for Auto or
// an unknown material it returns 0, false, 0.
func ClassifyFor(m Material, distance, sigma float64) (layers int, bulk bool, conf float64) {
	if p := profileOf(m); p != nil {
		return classifyIn(p.bands, distance, sigma)
	}
	return 0, false, 0
}

// AnalyzeFor analyses a spectrum of material m (MoS2, WS2, or Auto to decide
// from the spectrum) with DefaultOpts. See AnalyzeMaterial.
func AnalyzeFor(s device.Spectrum, m Material) (Result, error) {
	return AnalyzeMaterial(s.Shift, s.Counts, m, DefaultOpts())
}

// AnalyzeMaterial analyses the points (shift[i], counts[i]) in any order as
// a spectrum of m, and names the material in Result.Material when its bands
// are found.
//
// For MoS2 or WS2 it is the analysis of the package doc in that material's
// window and bands, and the fitted peaks must also lie in the material's
// published ranges (otherwise Found is false, and when the other material's
// bands are there the Reason says so). For an MoS2 spectrum the numbers are
// those of AnalyzeWith. For Auto ("" too) it applies the rule of the package
// doc (Materials): the material whose two bands are present, a low
// confidence when both are, Found false when neither is.
//
// It returns ErrNoData when no window holds enough points, and an error
// wrapping ErrUnknownMaterial for an unknown m.
func AnalyzeMaterial(shift, counts []float64, m Material, opts Opts) (Result, error) {
	if m == Auto || m == "" {
		return analyzeAuto(shift, counts, opts)
	}
	if m == Graphene {
		return AnalyzeGraphene(shift, counts, opts)
	}
	p := profileOf(m)
	if p == nil {
		return Result{}, fmt.Errorf("%w: %q (want MoS2, WS2 or auto)", ErrUnknownMaterial, string(m))
	}
	r, err := analyzeAs(p, shift, counts, opts)
	if err != nil || r.Found {
		return r, err
	}
	for _, o := range profiles {
		if o == p {
			continue
		}
		if or, err := analyzeAs(o, shift, counts, opts); err == nil && or.Found {
			r.Reason += fmt.Sprintf("; the spectrum shows %s bands (E2g %.1f, A1g %.1f cm⁻¹)", o.name, or.E2g.Position, or.A1g.Position)
		}
	}
	return r, nil
}

// analyzeAs is the analysis in p's window, with the fitted peaks held to
// p's published ranges; a Result found is named p's material.
func analyzeAs(p *profile, shift, counts []float64, opts Opts) (Result, error) {
	r, err := analyzeIn(p, shift, counts, opts)
	if err != nil || !r.Found {
		return r, err
	}
	if !p.inBands(r) {
		return Result{Reason: fmt.Sprintf("no %s found: the fitted peaks (E2g %.1f, A1g %.1f cm⁻¹) lie outside %s's bands (E2g %g–%g, A1g %g–%g cm⁻¹)",
			p.name, r.E2g.Position, r.A1g.Position, p.name, p.e2gBand[0], p.e2gBand[1], p.a1gBand[0], p.a1gBand[1]),
			Noise: r.Noise, Points: r.Points}, nil
	}
	r.Material = p.material
	return r, nil
}

// analyzeAuto decides the material (package doc, Materials).
func analyzeAuto(shift, counts []float64, opts Opts) (Result, error) {
	var found []Result
	var none Result // a not-found result, for its noise and points
	var reasons []string
	var noData error
	for _, p := range profiles {
		r, err := analyzeAs(p, shift, counts, opts)
		switch {
		case err != nil:
			noData = err
		case r.Found:
			found = append(found, r)
		default:
			reasons = append(reasons, r.Reason)
			none = r
		}
	}
	switch len(found) {
	case 0:
		if len(reasons) == 0 {
			if g, err := AnalyzeGraphene(shift, counts, opts); err == nil {
				return g, nil // no TMD window: a graphene spectrum
			}
			return Result{}, noData
		}
		return Result{Reason: "neither MoS2 nor WS2 found: " + strings.Join(reasons, "; "), Noise: none.Noise, Points: none.Points}, nil
	case 1:
		r := found[0]
		for _, o := range profiles {
			if o.material == r.Material {
				continue
			}
			if e, a, ok := residualBands(r, o, shift, counts, opts); ok {
				weaker := math.Min(e, a)
				return ambiguous(r, o.material, weaker/r.Noise, weaker/math.Min(r.E2g.Amplitude, r.A1g.Amplitude)), nil
			}
		}
		return r, nil
	}
	// Both materials' fits found their bands: name the stronger.
	sort.SliceStable(found, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b Result) int {
			switch {
			case a.SNR > b.SNR:
				return -1
			case a.SNR < b.SNR:
				return 1
			}
			return 0
		}(found[i], found[j]) < 0
	})
	strong, weak := found[0], found[1]
	ratio := 1.0
	if strong.SNR > 0 {
		ratio = weak.SNR / strong.SNR
	}
	return ambiguous(strong, weak.Material, weak.SNR, ratio), nil
}

// Bands is the reading of a material the analysis reads from its own bands
// rather than from two fitted peaks (a graphene film: D, G and 2D), or nil
// (MoS2, WS2: E2g and A1g are in the Result's own fields). A layer above
// that passes a reading on (a remote model's description) takes it from
// here without naming the material.
func (r Result) Bands() any {
	if r.Graphene != nil {
		return r.Graphene
	}
	return nil
}
