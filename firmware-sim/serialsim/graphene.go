package serialsim

import (
	"math"
	"math/rand/v2"

	"hcp-edge/firmware-sim/plant"
)

// Window is a spectrometer's spectral window: Points points from First in
// steps of Step (cm⁻¹). The simulated spectrometer is one instrument (a
// 532 nm spectrometer reading shift and counts line by line); which window
// it reads is its grating position, set for the rig it serves: the TMD
// window (150–550 cm⁻¹ at 0.5 cm⁻¹, 801 points, the low-frequency grating
// the MoS2/WS2 bands and the Si line need) or the graphene window
// (1100–3000 cm⁻¹ at 2 cm⁻¹, 951 points: D, G and 2D with 100 cm⁻¹ of
// baseline on either side, at a resolution ample for bands 14 cm⁻¹ wide and
// more). The data block carries the shift of every point, so the driver
// (drivers/raman, up to 8192 points) and the analysis read either window
// without being told which.
type Window struct {
	First, Step float64
	Points      int
}

// The windows.
var (
	TMDWindow      = Window{First: ShiftFirst, Step: ShiftStep, Points: ShiftPoints}
	GrapheneWindow = Window{First: 1100, Step: 2, Points: 951}
)

// At is the shift of point i, cm⁻¹.
func (w Window) At(i int) float64 { return w.First + w.Step*float64(i) }

// WindowFor is the window the spectrometer of rig r reads.
func WindowFor(r plant.Rig) Window {
	if r == plant.RigGraphene {
		return GrapheneWindow
	}
	return TMDWindow
}

// Graphene band model, 532 nm excitation, after Ferrari et al., "Raman
// spectrum of graphene and graphene layers", Phys. Rev. Lett. 97, 187401
// (2006), and Malard et al., Phys. Rep. 473, 51 (2009): G near 1580 cm⁻¹
// (FWHM ≈ 14), 2D near 2680–2700 cm⁻¹; a monolayer's 2D is one sharp
// Lorentzian (FWHM ≈ 30) about 2.2 times as high as G; an AB bilayer's 2D
// is four components (2D1B, 2D1A, 2D2A, 2D2B) that read as one broader band
// (FWHM ≈ 50), upshifted, lower than G against a G twice the monolayer's;
// the defect-activated D band near 1350 cm⁻¹ (FWHM ≈ 30) with the height
// ratio D/G of plant.Film.GrapheneDG. Graphene on copper sits on the foil's
// broad photoluminescence (the fluorescence effect) and has no Si line.
// Not simulated: D' (≈ 1620 cm⁻¹, on G's shoulder), D+D' (≈ 2940 cm⁻¹),
// and the doping and strain shifts of the positions.
const (
	grGRate       = 2000.0 // G height of a monolayer, counts per second (the MoS2 bands' scale)
	grGPos        = 1584.0
	grGHalfWidth  = 7.0
	gr2DPos       = 2684.0
	gr2DHalfWidth = 15.0
	gr2DOverG     = 2.2
	grDPos        = 1350.0
	grDHalfWidth  = 15.0
	grBgRate      = 300.0
)

// bilayer2D are the AB bilayer's 2D components: position, height (relative
// to G's monolayer height) and half width.
var bilayer2D = [4][3]float64{
	{2658, 0.15, 12},
	{2683, 0.55, 12},
	{2703, 0.75, 12},
	{2722, 0.15, 12},
}

// GrapheneBands are the band positions (cm⁻¹) the simulator uses: D, G and
// the monolayer's 2D.
func GrapheneBands() (d, g, twoD float64) { return grDPos, grGPos, gr2DPos }

// grapheneRates is the noise-free spectrum of a foil with film on it in
// window w: counts per second, the area-weighted mixture of bare copper,
// monolayer and bilayer.
func grapheneRates(film plant.Film, w Window) []float64 {
	c1 := math.Max(0, math.Min(1, film.Graphene))
	if math.IsNaN(c1) {
		c1 = 0
	}
	c2 := math.Max(0, math.Min(c1, film.GrapheneBilayer))
	if math.IsNaN(c2) {
		c2 = 0
	}
	mono := c1 - c2
	dg := film.GrapheneDG
	if !(dg > 0) || math.IsInf(dg, 0) {
		dg = 0
	}
	gMono, gBi := grGRate*mono, 2*grGRate*c2
	out := make([]float64, w.Points)
	for i := range out {
		x := w.At(i)
		r := grBgRate
		r += (gMono + gBi) * lorentz(x, grGPos, grGHalfWidth)
		r += dg * (gMono + gBi) * lorentz(x, grDPos, grDHalfWidth)
		r += gr2DOverG * gMono * lorentz(x, gr2DPos, gr2DHalfWidth)
		for _, b := range bilayer2D {
			r += b[1] * gBi * lorentz(x, b[0], b[2])
		}
		out[i] = r
	}
	return out
}

// copperBackground is the background of graphene on copper foil, sample
// seed: the sample's level, slope and curvature across w (the draws of
// sampleBackground), and the copper's photoluminescence, a broad hump near
// 2.1 eV (590 nm: ≈ 1850 cm⁻¹ of shift at 532 nm) at 1650–2050 cm⁻¹, with a
// width (σ) of 350–650 cm⁻¹, up to 0.4 of the level. Its u runs over w.
func copperBackground(seed uint64, w Window) fluoBackground {
	b := sampleBackground(seed)
	r := newRand(seed ^ 0x436f70706572) // "Copper"
	b.humpAt = 1650 + 400*r.Float64()
	b.humpW = 350 + 300*r.Float64()
	b.first, b.span = w.First, w.Step*float64(w.Points-1)
	return b
}

// synthGraphene is one acquisition of ms milliseconds of a graphene foil in
// window w with the effects of e (synthWith's, but for the mixture of
// coverages, which a graphene film always is; the fluorescence background
// is copperBackground).
func synthGraphene(film plant.Film, ms int, w Window, rng, spikes *rand.Rand, e Effects) []uint64 {
	t := float64(ms) / 1000
	rates := grapheneRates(film, w)
	if e.Fluorescence > 0 {
		bg := copperBackground(e.Sample, w)
		for i := range rates {
			rates[i] += e.Fluorescence * bg.at(w.At(i))
		}
	}
	return detect(rates, t, rng, spikes, e)
}

// GrapheneSpectrum is one acquisition of integrationMS milliseconds (sim
// time) of a copper foil with film on it, in the graphene window, noise
// drawn from seed, with effects e, and the truth the analysis should find
// (film.Truth): SpectrumWith for the graphene rig.
func GrapheneSpectrum(film plant.Film, integrationMS int, seed uint64, e Effects) (shift []float64, counts []uint64, truth plant.Truth) {
	w := GrapheneWindow
	counts = synthGraphene(film, integrationMS, w, newRand(seed), spikeRand(seed), e)
	shift = make([]float64, len(counts))
	for i := range shift {
		shift[i] = w.At(i)
	}
	return shift, counts, film.Truth()
}

// SpectrumOf is one acquisition by the spectrometer of rig r (its window,
// its sample): Spectrum on the sulfurization rig, GrapheneSpectrum without
// effects on the graphene rig. A caller that knows the plant, not the rig
// (the agent's preview), reads either through it.
func SpectrumOf(r plant.Rig, film plant.Film, integrationMS int, seed uint64) (shift []float64, counts []uint64) {
	if WindowFor(r) == GrapheneWindow {
		shift, counts, _ = GrapheneSpectrum(film, integrationMS, seed, Effects{})
		return shift, counts
	}
	return Spectrum(film, integrationMS, seed)
}
