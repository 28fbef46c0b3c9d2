package serialsim

import "math"

// WS2 band model, 532 nm excitation. Positions follow the layer dependence
// reported for WS2 by Berkdemir et al., "Identification of individual and
// few layers of WS2 using Raman spectroscopy", Sci. Rep. 3, 1755 (2013),
// doi:10.1038/srep01755 (the A1g(Γ) mode stiffens with the number of
// layers, the in-plane E2g¹(Γ) mode softens slightly): monolayer E2g¹ ≈ 357
// and A1g ≈ 418 cm⁻¹, bulk ≈ 355.5 and ≈ 420.5 cm⁻¹, so the distance grows
// from ≈ 61 cm⁻¹ (1L) to ≈ 65 cm⁻¹ (bulk). The 2L and 3L rows are
// interpolated on the same trend (most of the A1g shift happens between
// one and two layers). Intensities are the simulator's own.
//
// Not simulated: the second-order 2LA(M) band at ≈ 352 cm⁻¹, which under
// 514–532 nm excitation is resonant in a monolayer (Berkdemir et al.) and
// overlaps E2g¹, often outshining it. A real monolayer spectrum needs a third
// Lorentzian there.
const (
	ws2E2gRate      = 2400.0
	ws2A1gRate      = 2000.0
	ws2E2gHalfWidth = 2.0 // HWHM, cm⁻¹
	ws2A1gHalfWidth = 2.2
)

// ws2Peaks holds E2g¹ and A1g positions for 1, 2, 3 and ≥4 layers of WS2.
var ws2Peaks = [bulkLayers][2]float64{
	{357.0, 418.0},
	{356.5, 419.3},
	{356.0, 419.9},
	{355.5, 420.5},
}

// WS2Peaks returns the E2g¹ and A1g positions (cm⁻¹) the simulator uses for
// layers of WS2, interpolating linearly between whole layer counts; below one
// layer the monolayer positions apply, from four layers on the bulk ones.
func WS2Peaks(layers float64) (e2g, a1g float64) { return peaksAt(&ws2Peaks, layers) }

// ws2Band is the WS2 contribution to a spectrum: two Lorentzians.
type ws2Band struct {
	e2g, a1g       float64 // positions
	e2gAmp, a1gAmp float64 // heights, counts per second
}

// ws2Bands is the band contribution of layers of WS2 (none below minLayers).
// The A1g mode gains on E2g¹ as the film thickens.
func ws2Bands(layers float64) ws2Band {
	amount := amountOf(layers)
	if amount == 0 {
		return ws2Band{}
	}
	e, a := WS2Peaks(layers)
	return ws2Band{e2g: e, a1g: a, e2gAmp: ws2E2gRate * amount,
		a1gAmp: ws2A1gRate * amount * (1 + 0.15*(math.Max(amount, 1)-1))}
}

// at is the band's rate at shift x (cm⁻¹).
func (b ws2Band) at(x float64) float64 {
	if b.e2gAmp == 0 {
		return 0
	}
	return b.e2gAmp*lorentz(x, b.e2g, ws2E2gHalfWidth) + b.a1gAmp*lorentz(x, b.a1g, ws2A1gHalfWidth)
}
