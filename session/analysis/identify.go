package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"hcp-edge/device"
)

// What Identify names besides a single material.
const (
	// NameNone: no material's bands stand above the noise.
	NameNone = "none"
	// NameMixture: the bands of more than one material are present.
	NameMixture = "mixture"
)

// NoneConfidence is the confidence of an identification that found no
// band: the absence of bands is weak evidence (a film below the detection
// limit, a spot off the film or an integration too short look the same).
const NoneConfidence = 0.2

// Identification is what a spectrum shows, named from the positions of the
// bands found and their uncertainties against each material's published
// ranges (package doc, Identification): one material, a mixture with its
// fractions, or none.
type Identification struct {
	// Name is "MoS2", "WS2", NameMixture or NameNone.
	Name string `json:"name"`
	// Confidence in [0, 1] that the spectrum shows what Name says.
	Confidence float64 `json:"confidence"`
	// Fractions, for a mixture only, is each material's share of the band
	// heights (E2g + A1g): a share of the signal, not of the area covered
	// (the materials' Raman cross-sections differ).
	Fractions map[string]float64 `json:"fractions,omitempty"`
	// Bands are the bands found, the strongest material first.
	Bands []MaterialBands `json:"bands,omitempty"`
	// Reason says why, for none and mixture.
	Reason string `json:"reason,omitempty"`
}

// MaterialBands is one material's two bands as found: positions and
// standard errors (cm⁻¹; 0 for bands read from a fit's residual, whose
// position is the highest point in the published range), heights above
// the baseline (counts) and the weaker band's SNR.
type MaterialBands struct {
	Material    Material `json:"material"`
	E2g         float64  `json:"e2g_cm1"`
	E2gErr      float64  `json:"e2g_err_cm1"`
	A1g         float64  `json:"a1g_cm1"`
	A1gErr      float64  `json:"a1g_err_cm1"`
	E2gHeight   float64  `json:"e2g_height"`
	A1gHeight   float64  `json:"a1g_height"`
	SNR         float64  `json:"snr"`
	Probability float64  `json:"in_published_ranges"`
}

// Single reports whether id names one material (not a mixture, not none).
func (id Identification) Single() bool {
	return id.Name != NameNone && id.Name != NameMixture && id.Name != ""
}

// Strongest is the material whose bands are strongest, "" for none.
func (id Identification) Strongest() Material {
	if len(id.Bands) == 0 {
		return ""
	}
	return id.Bands[0].Material
}

// IdentifyFor identifies the material of a spectrum with DefaultOpts.
func IdentifyFor(s device.Spectrum) (Identification, error) {
	return Identify(s.Shift, s.Counts, DefaultOpts())
}

// Identify names what the spectrum (shift[i], counts[i]) shows. Each known
// material's analysis runs in its own window, its fitted peaks held to its
// published ranges (AnalyzeMaterial); a material whose analysis did not
// find its bands is still present when both of its bands stand DetectSNR
// noise levels above what another material's fit leaves. One material
// present: its name, with the confidence that both its bands lie in its
// published ranges (their positions ± errors) times how far above the
// detection limit the weaker stands. More than one: NameMixture with the
// fractions. None: NameNone with NoneConfidence. It returns ErrNoData when
// no window holds enough points.
func Identify(shift, counts []float64, opts Opts) (Identification, error) {
	if opts.DetectSNR <= 0 || !finite(opts.DetectSNR) {
		opts.DetectSNR = DefaultOpts().DetectSNR
	}
	var (
		found   []Result
		reasons []string
		noData  error
		usable  bool
	)
	for _, p := range profiles {
		r, err := analyzeAs(p, shift, counts, opts)
		switch {
		case err != nil:
			noData = err
			continue
		case r.Found:
			found = append(found, r)
		default:
			reasons = append(reasons, r.Reason)
		}
		usable = true
	}
	if !usable {
		return identifyGraphene(shift, counts, opts, noData)
	}
	var bands []MaterialBands
	for _, r := range found {
		p := profileOf(r.Material)
		prob := bandProbability(p.e2gBand, r.E2g) * bandProbability(p.a1gBand, r.A1g)
		bands = append(bands, MaterialBands{Material: r.Material, E2g: r.E2g.Position, E2gErr: r.E2g.PositionErr,
			A1g: r.A1g.Position, A1gErr: r.A1g.PositionErr, E2gHeight: r.E2g.Amplitude, A1gHeight: r.A1g.Amplitude,
			SNR: r.SNR, Probability: round4(prob)})
	}
	if len(found) == 1 { // another material's bands in what this one's fit leaves?
		r := found[0]
		for _, o := range profiles {
			if o.material == r.Material {
				continue
			}
			if e, a, ok := residualBands(r, o, shift, counts, opts); ok {
				bands = append(bands, MaterialBands{Material: o.material, E2g: argmaxIn(o.e2gBand, r, shift, counts),
					A1g: argmaxIn(o.a1gBand, r, shift, counts), E2gHeight: e, A1gHeight: a, SNR: math.Min(e, a) / r.Noise, Probability: 1})
			}
		}
	}
	sort.SliceStable(bands, func(i, j int) bool { // strongest first; sort.SliceStable: no generic instantiation in the binary
		return bands[i].E2gHeight+bands[i].A1gHeight > bands[j].E2gHeight+bands[j].A1gHeight
	})
	switch len(bands) {
	case 0:
		return Identification{Name: NameNone, Confidence: NoneConfidence,
			Reason: "no material's bands stand above the noise: " + strings.Join(reasons, "; ")}, nil
	case 1:
		b := bands[0]
		return Identification{Name: string(b.Material), Confidence: round4(b.Probability * detection(b.SNR, opts.DetectSNR)), Bands: bands}, nil
	}
	id := Identification{Name: NameMixture, Fractions: map[string]float64{}, Bands: bands, Confidence: 1}
	total := 0.0
	for _, b := range bands {
		total += b.E2gHeight + b.A1gHeight
	}
	var parts []string
	for _, b := range bands {
		f := (b.E2gHeight + b.A1gHeight) / total
		id.Fractions[string(b.Material)] = round4(f)
		id.Confidence = math.Min(id.Confidence, b.Probability*detection(b.SNR, opts.DetectSNR))
		parts = append(parts, fmt.Sprintf("%s (SNR %.0f, %.0f %% of the band signal)", b.Material, b.SNR, 100*f))
	}
	id.Confidence = round4(id.Confidence)
	id.Reason = "the bands of more than one material are present: " + strings.Join(parts, ", ")
	return id, nil
}

// identifyGraphene names what a spectrum no TMD window can read shows,
// when it covers the graphene window: "graphene" with the analysis'
// confidence (the G band's detection strength × the layer confidence), or
// none with NoneConfidence ("no graphene detected") when no G band stands
// above the noise. Otherwise the TMD analyses' ErrNoData stands.
func identifyGraphene(shift, counts []float64, opts Opts, noData error) (Identification, error) {
	r, err := AnalyzeGraphene(shift, counts, opts)
	switch {
	case err != nil:
		return Identification{}, noData
	case !r.Found:
		return Identification{Name: NameNone, Confidence: NoneConfidence, Reason: r.Reason}, nil
	}
	return Identification{Name: string(Graphene), Confidence: r.Confidence}, nil
}

// bandProbability is the probability that a peak at pk.Position with
// standard error pk.PositionErr lies in band (normal errors); 1 or 0 for a
// peak without an error.
func bandProbability(band [2]float64, pk Peak) float64 {
	s := pk.PositionErr
	if !(s > 0) || !finite(s) {
		if pk.Position >= band[0] && pk.Position <= band[1] {
			return 1
		}
		return 0
	}
	return clamp01(normCDF((band[1]-pk.Position)/s) - normCDF((band[0]-pk.Position)/s))
}

// detection is how surely a band of signal-to-noise snr is there: 1/2 at
// the detection limit, 15/16 at twice it, 1 − 2⁻⁹ at three times.
func detection(snr, limit float64) float64 {
	if !(snr > 0) {
		return 0
	}
	x := snr / limit
	return clamp01(1 - math.Exp2(-x*x))
}

// argmaxIn is the shift of the highest point of what r's fit leaves in
// band (the position of a band read from the residual).
func argmaxIn(band [2]float64, r Result, shift, counts []float64) float64 {
	best, at := math.Inf(-1), (band[0]+band[1])/2
	for i := range shift {
		x, y := shift[i], counts[i]
		if finite(x) && finite(y) && x >= band[0] && x <= band[1] && y-r.Model(x) > best {
			best, at = y-r.Model(x), x
		}
	}
	return at
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// LayerCountOf is the layer count the Raman analysis would report for a
// film of thickness layers (a mean, in layers, as a growth model predicts
// it): the whole layer count that covers most of the sample (a film of
// n + f layers covers 1 − f with n and f with n + 1; on a tie the thinner),
// at least 1 for any film, and BulkLayerCount with bulk true from there on:
// the analysis' bands end at "bulk" (four or more). 0 for no film.
func LayerCountOf(layers float64) (count int, bulk bool) {
	if !(layers > 0) {
		return 0, false
	}
	n := math.Floor(layers)
	if layers-n > 0.5 {
		n++
	}
	c := max(int(n), 1)
	if c >= BulkLayerCount {
		return BulkLayerCount, true
	}
	return c, false
}

// BulkLayerCount is the layer count of the analysis' last band: "bulk",
// four layers or more (Result.Bulk), for every material.
const BulkLayerCount = 4
