package analysis

// profile is what the analysis knows of one material: its fit window, the
// regions where each peak is looked for, the layer bands of its A1g−E2g
// distance, and the published ranges its two bands lie in (532 nm), by
// which AnalyzeFor decides that the bands found are the material's.
type profile struct {
	material           Material
	name               string // in reasons: "MoS2", "WS2"
	windowLo, windowHi float64
	edgeW              float64 // width of each baseline edge region
	e2gLo, e2gHi       float64 // detection region of E2g; the fit allows 3 cm⁻¹ more
	a1gLo, a1gHi       float64 // detection region of A1g
	bands              []Band
	e2gBand, a1gBand   [2]float64 // published position ranges, with a margin
	reference          string     // the source of the layer bands, as a result cites it
}

// mos2Profile is the analysis as it has always been (package doc).
var mos2Profile = profile{
	material: MoS2, name: "MoS2",
	windowLo: WindowLo, windowHi: WindowHi, edgeW: edgeW,
	e2gLo: e2gLo, e2gHi: e2gHi, a1gLo: a1gLo, a1gHi: a1gHi,
	bands: bands[:],
	// Published: E2g ≈ 383–385, A1g ≈ 403–408 cm⁻¹ (Lee et al. 2010).
	e2gBand: [2]float64{381.5, 386.5}, a1gBand: [2]float64{401.5, 409.5},
	reference: "Lee et al. 2010",
}

// ws2Bands is the WS2 distance-to-layer mapping (package doc, WS2).
var ws2Bands = [...]Band{
	{Layers: 1, Lo: 59.5, Hi: 61.9, CoreLo: 60.5, CoreHi: 61.5},
	{Layers: 2, Lo: 61.9, Hi: 63.35, CoreLo: 62.4, CoreHi: 63.2},
	{Layers: 3, Lo: 63.35, Hi: 64.45, CoreLo: 63.6, CoreHi: 64.2},
	{Layers: 4, Lo: 64.45, Hi: 66.5, CoreLo: 64.7, CoreHi: 65.5},
}

// ws2Profile: E2g¹ ≈ 355–357 and A1g ≈ 417–421 cm⁻¹ (Berkdemir et al. 2013).
// The window reaches past both bands by 15 cm⁻¹ and more, so that its edge
// regions (330–345, 430–445) hold neither WS2 nor MoS2 band.
var ws2Profile = profile{
	material: WS2, name: "WS2",
	windowLo: 330, windowHi: 445, edgeW: 15,
	e2gLo: 348, e2gHi: 364, a1gLo: 410, a1gHi: 428,
	bands:   ws2Bands[:],
	e2gBand: [2]float64{353.5, 358.5}, a1gBand: [2]float64{415.5, 422.5},
	reference: "Berkdemir et al. 2013",
}

// profiles are the materials AnalyzeFor tells apart, in the order it tries them.
var profiles = []*profile{&mos2Profile, &ws2Profile}

// BandsReference cites the source of the layer bands m's analysis maps the
// peak distance by (a result's method names it). A material without a
// two-band profile of its own, and Unnamed's "", cite the bands Analyze
// uses.
func BandsReference(m Material) string {
	if p := profileOf(m); p != nil {
		return p.reference
	}
	return mos2Profile.reference
}

// profileOf returns m's profile, or nil.
func profileOf(m Material) *profile {
	for _, p := range profiles {
		if p.material == m {
			return p
		}
	}
	return nil
}

// inBands reports whether r's fitted peaks lie in the profile's published
// ranges.
func (p *profile) inBands(r Result) bool {
	return r.Found &&
		r.E2g.Position >= p.e2gBand[0] && r.E2g.Position <= p.e2gBand[1] &&
		r.A1g.Position >= p.a1gBand[0] && r.A1g.Position <= p.a1gBand[1]
}
