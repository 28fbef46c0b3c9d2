package serialsim

import (
	"math"
	"math/rand/v2"

	"hcp-edge/firmware-sim/plant"
)

// Effects are the features of a real spectrum the simulator adds to the
// ideal one on request (the spectrum faults of plant.SpectrumFaults, and the
// sample they are drawn for). The zero value adds none: the spectrum is then
// exactly Spectrum's.
type Effects struct {
	plant.SpectrumFaults
	// Sample seeds the shape of the sample's fluorescence background (its
	// level, slope and curvature): every acquisition of one sample shows the
	// same background, another sample another.
	Sample uint64
}

// fluoBackground is a sample's sloped fluorescence background, counts per
// second at unit strength: level + slope·u + curve·u² over u in [0, 1]
// across the axis, plus a broad hump.
type fluoBackground struct {
	level, slope, curve float64
	hump, humpAt, humpW float64
	first, span         float64 // the axis u runs over; 0, 0: the TMD window
}

// sampleBackground draws the background of sample seed.
func sampleBackground(seed uint64) fluoBackground {
	r := newRand(seed ^ 0x5deece66d)
	level := 1500 + 4500*r.Float64()
	return fluoBackground{
		level:  level,
		slope:  level * (-0.5 + 1.3*r.Float64()),
		curve:  level * (-0.3 + 0.6*r.Float64()),
		hump:   level * 0.4 * r.Float64(),
		humpAt: 250 + 250*r.Float64(),
		humpW:  60 + 80*r.Float64(),
	}
}

// at is the background at shift x (cm⁻¹), counts per second at unit strength.
func (b fluoBackground) at(x float64) float64 {
	u := (x - ShiftFirst) / (ShiftStep * (ShiftPoints - 1))
	if b.span > 0 {
		u = (x - b.first) / b.span
	}
	d := (x - b.humpAt) / b.humpW
	return math.Max(0, b.level+b.slope*u+b.curve*u*u+b.hump*math.Exp(-d*d/2))
}

// mixedRates is the noise-free spectrum of a film whose fractional layer is
// a partial coverage: a film of n+f layers of one material is the mixture,
// weighted 1−f and f, of the spectra of n and n+1 whole layers. A film of
// both materials, or a whole or bulk one, renders as expectedRates does.
func mixedRates(film plant.Film) []float64 {
	mos2, ws2 := film.MoS2, film.WS2
	l, single := mos2, func(n float64) plant.Film { return plant.Film{MoS2: n} }
	if ws2 > 0 {
		l, single = ws2, func(n float64) plant.Film { return plant.Film{WS2: n} }
	}
	n := math.Floor(l)
	fr := l - n
	if (mos2 > 0 && ws2 > 0) || fr == 0 || n >= bulkLayers || math.IsNaN(l) {
		return expectedRates(film)
	}
	lo, hi := expectedRates(single(n)), expectedRates(single(n+1))
	for i := range lo {
		lo[i] = (1-fr)*lo[i] + fr*hi[i]
	}
	return lo
}

// spikeRand is the stream the cosmic-ray spikes are drawn from, apart from
// the shot noise's so that the noise of a spectrum with and without spikes
// is the same.
func spikeRand(seed uint64) *rand.Rand { return newRand(seed ^ 0x2545f4914f6cdd1d) }

// synthWith is synthSpectrum with effects: the mixture of coverages, the
// fluorescence background (its shot noise too), cosmic-ray spikes, and
// clipping at the detector's full well. With zero effects it is
// synthSpectrum, draw for draw.
func synthWith(film plant.Film, ms int, rng, spikes *rand.Rand, e Effects) []uint64 {
	if e == (Effects{}) {
		return synthSpectrum(film, ms, rng)
	}
	t := float64(ms) / 1000
	var rates []float64
	if e.MixedCoverage {
		rates = mixedRates(film)
	} else {
		rates = expectedRates(film)
	}
	if e.Fluorescence > 0 {
		bg := sampleBackground(e.Sample)
		for i := range rates {
			rates[i] += e.Fluorescence * bg.at(ShiftAt(i))
		}
	}
	return detect(rates, t, rng, spikes, e)
}

// detect is the detector's reading of rates (counts per second per pixel)
// over t seconds: shot noise, then e's cosmic-ray spikes, then its full
// well. Every spectrum of the simulator goes through it.
func detect(rates []float64, t float64, rng, spikes *rand.Rand, e Effects) []uint64 {
	out := make([]uint64, len(rates))
	for i, r := range rates {
		out[i] = shotNoise(r*t, rng)
	}
	if e.Spikes > 0 {
		addSpikes(out, e.Spikes, spikes)
	}
	if e.FullWell > 0 {
		for i := range out {
			out[i] = min(out[i], e.FullWell)
		}
	}
	return out
}

// addSpikes adds a Poisson number of mean mean cosmic-ray spikes: each hits
// one or two neighbouring pixels with 1500–40000 counts, whatever the
// integration time.
func addSpikes(counts []uint64, mean float64, rng *rand.Rand) {
	k := int(shotNoise(mean, rng))
	for range k {
		i := rng.IntN(len(counts))
		h := 1500 + 38500*rng.Float64()*rng.Float64()
		counts[i] += uint64(h)
		if rng.IntN(3) == 0 && i+1 < len(counts) {
			counts[i+1] += uint64(h * (0.2 + 0.5*rng.Float64()))
		}
	}
}

// SpectrumWith is Spectrum with effects: one acquisition of integrationMS
// milliseconds of a sample with film on it, noise drawn from seed, and the
// truth the analysis should find (film.Truth). With zero effects the counts
// are exactly Spectrum's.
func SpectrumWith(film plant.Film, integrationMS int, seed uint64, e Effects) (shift []float64, counts []uint64, truth plant.Truth) {
	counts = synthWith(film, integrationMS, newRand(seed), spikeRand(seed), e)
	shift = make([]float64, len(counts))
	for i := range shift {
		shift[i] = ShiftAt(i)
	}
	return shift, counts, film.Truth()
}
