package serialsim

import (
	"slices"
	"testing"

	"hcp-edge/firmware-sim/plant"
)

// TestEffectsZeroIsSpectrum: with no effect the spectrum is exactly today's.
func TestEffectsZeroIsSpectrum(t *testing.T) {
	for _, film := range []plant.Film{{}, {MoS2: 1}, {MoS2: 2.4}, {WS2: 3}} {
		_, want := Spectrum(film, 1000, 7)
		_, got, _ := SpectrumWith(film, 1000, 7, Effects{})
		if !slices.Equal(got, want) {
			t.Fatalf("film %+v: zero effects changed the spectrum", film)
		}
	}
}

func TestEffectsMixedCoverage(t *testing.T) {
	// 1.3 layers of MoS2: 70 % monolayer, 30 % bilayer.
	film := plant.Film{MoS2: 1.3}
	mixed := mixedRates(film)
	one, two := expectedRates(plant.Film{MoS2: 1}), expectedRates(plant.Film{MoS2: 2})
	for i := range mixed {
		if w := 0.7*one[i] + 0.3*two[i]; abs(mixed[i]-w) > 1e-6*w {
			t.Fatalf("point %d: %g, want %g", i, mixed[i], w)
		}
	}
	_, _, truth := SpectrumWith(film, 1000, 1, Effects{SpectrumFaults: plant.SpectrumFaults{MixedCoverage: true}})
	if truth.LayerCount != 1 || abs(truth.Coverage[1]-0.7) > 1e-9 || abs(truth.Coverage[2]-0.3) > 1e-9 || truth.Material != "MoS2" {
		t.Fatalf("truth %+v", truth)
	}
}

func TestEffectsBackgroundSpikesSaturation(t *testing.T) {
	film := plant.Film{WS2: 1}
	_, plain := Spectrum(film, 1000, 3)
	_, fl, _ := SpectrumWith(film, 1000, 3, Effects{SpectrumFaults: plant.SpectrumFaults{Fluorescence: 1}, Sample: 11})
	var sumP, sumF uint64
	for i := range plain {
		sumP += plain[i]
		sumF += fl[i]
	}
	if sumF < sumP+uint64(len(plain))*500 {
		t.Fatalf("fluorescence added too little: %d vs %d", sumF, sumP)
	}
	// Another sample, another background; the same sample, the same one.
	a, b, c := sampleBackground(11), sampleBackground(12), sampleBackground(11)
	if a == b || a != c {
		t.Fatal("background does not vary by sample, or varies within one")
	}
	_, sp, _ := SpectrumWith(film, 1000, 3, Effects{SpectrumFaults: plant.SpectrumFaults{Spikes: 20}})
	hits := 0
	for i := range sp {
		if sp[i] > plain[i]+1000 {
			hits++
		}
	}
	if hits == 0 {
		t.Fatal("no spike")
	}
	_, sat, _ := SpectrumWith(plant.Film{}, 3000, 3, Effects{SpectrumFaults: plant.SpectrumFaults{FullWell: 20000}})
	if m := slices.Max(sat); m != 20000 {
		t.Fatalf("max %d, want the full well 20000 (the Si line saturates)", m)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
