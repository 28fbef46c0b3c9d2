package serialsim

import (
	"math"
	"math/rand/v2"

	"hcp-edge/firmware-sim/plant"
)

// The spectrum's axis: 150.0 .. 550.0 cm⁻¹ in 0.5 cm⁻¹ steps.
const (
	ShiftFirst  = 150.0
	ShiftStep   = 0.5
	ShiftPoints = 801
)

// ShiftAt is the Raman shift of point i, in cm⁻¹.
func ShiftAt(i int) float64 { return ShiftFirst + ShiftStep*float64(i) }

// Peak model. Rates are counts per second of integration.
const (
	siShift      = 520.7
	siRate       = 30000.0
	siHalfWidth  = 1.8  // HWHM, cm⁻¹
	siAttenuate  = 0.25 // per layer: the film absorbs the substrate's signal
	e2gRate      = 2500.0
	a1gRate      = 2600.0
	e2gHalfWidth = 1.75
	a1gHalfWidth = 2.0
	bgRate       = 300.0
	fluoRate     = 200.0
	fluoDecay    = 120.0 // cm⁻¹
	minLayers    = 0.2   // below this coverage no peak of the material shows
	bulkLayers   = 4
)

// mos2Peaks holds E2g and A1g positions for 1, 2, 3 and ≥4 layers.
var mos2Peaks = [bulkLayers][2]float64{
	{385.2, 403.9},
	{383.8, 405.3},
	{383.3, 406.3},
	{382.6, 407.6},
}

// MoS2Peaks returns the E2g and A1g positions (cm⁻¹) the simulator uses for
// layers of MoS2, interpolating linearly between whole layer counts; below one
// layer the monolayer positions apply, from four layers on the bulk ones.
func MoS2Peaks(layers float64) (e2g, a1g float64) { return peaksAt(&mos2Peaks, layers) }

// peaksAt interpolates a table of (E2g, A1g) for 1, 2, 3 and ≥4 layers.
func peaksAt(table *[bulkLayers][2]float64, layers float64) (e2g, a1g float64) {
	m := math.Max(1, math.Min(layers, bulkLayers))
	if math.IsNaN(m) {
		m = 1
	}
	i := int(math.Floor(m))
	if i >= bulkLayers {
		return table[bulkLayers-1][0], table[bulkLayers-1][1]
	}
	fr := m - float64(i)
	lo, hi := table[i-1], table[i]
	return lo[0] + fr*(hi[0]-lo[0]), lo[1] + fr*(hi[1]-lo[1])
}

// amountOf is how much of a material's band intensity layers give: nothing
// below minLayers of coverage, then proportional up to bulk.
func amountOf(layers float64) float64 {
	if layers > minLayers {
		return math.Min(layers, bulkLayers)
	}
	return 0
}

// expectedRates is the noise-free spectrum of a sample with film on it, in
// counts per second: background, the silicon line (attenuated by the whole
// film) and the bands of each material grown.
func expectedRates(film plant.Film) []float64 {
	mos2, ws2 := film.MoS2, film.WS2
	if math.IsNaN(mos2) || mos2 < 0 {
		mos2 = 0
	}
	if math.IsNaN(ws2) || ws2 < 0 {
		ws2 = 0
	}
	layers := mos2 + ws2
	out := make([]float64, ShiftPoints)
	si := siRate * math.Exp(-siAttenuate*layers)
	amount := amountOf(mos2)
	e2g, a1g := MoS2Peaks(mos2)
	// The A1g mode gains on the E2g mode as the film thickens.
	a1gAmp := a1gRate * amount * (1 + 0.1*(math.Max(amount, 1)-1))
	w := ws2Bands(ws2)
	for i := range out {
		x := ShiftAt(i)
		r := bgRate + fluoRate*math.Exp(-(x-ShiftFirst)/fluoDecay)
		r += si * lorentz(x, siShift, siHalfWidth)
		if amount > 0 {
			r += e2gRate * amount * lorentz(x, e2g, e2gHalfWidth)
			r += a1gAmp * lorentz(x, a1g, a1gHalfWidth)
		}
		r += w.at(x)
		out[i] = r
	}
	return out
}

// lorentz is a Lorentzian of height 1 at x0 with half width at half maximum g.
func lorentz(x, x0, g float64) float64 {
	d := (x - x0) / g
	return 1 / (1 + d*d)
}

// synthSpectrum is one acquisition of ms milliseconds (sim time) of a sample
// with film on it: the expected counts plus shot noise.
func synthSpectrum(film plant.Film, ms int, rng *rand.Rand) []uint64 {
	t := float64(ms) / 1000
	rates := expectedRates(film)
	out := make([]uint64, len(rates))
	for i, r := range rates {
		out[i] = shotNoise(r*t, rng)
	}
	return out
}

// Spectrum is one acquisition of integrationMS milliseconds (sim time) of a
// sample with film on it, as the spectrometer sends it (the shifts of the
// axis and the counts), drawn with the noise source seed seeds. It is the
// data block's content without the instrument, for tests of what reads it.
func Spectrum(film plant.Film, integrationMS int, seed uint64) (shift []float64, counts []uint64) {
	counts = synthSpectrum(film, integrationMS, newRand(seed))
	shift = make([]float64, len(counts))
	for i := range shift {
		shift[i] = ShiftAt(i)
	}
	return shift, counts
}

// shotNoise draws a Poisson-like count of mean lambda: exact Poisson for small
// means, the normal approximation above.
func shotNoise(lambda float64, rng *rand.Rand) uint64 {
	if !(lambda > 0) {
		return 0
	}
	if lambda < 30 {
		l, k, p := math.Exp(-lambda), 0, 1.0
		for {
			p *= rng.Float64()
			if p <= l {
				return uint64(k)
			}
			k++
		}
	}
	v := math.Round(lambda + math.Sqrt(lambda)*rng.NormFloat64())
	if v < 0 {
		return 0
	}
	return uint64(v)
}
