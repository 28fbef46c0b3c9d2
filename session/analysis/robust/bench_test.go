package robust

import (
	"testing"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
)

func BenchmarkAnalyze(b *testing.B) {
	x, y, _ := spectrum(plant.Film{MoS2: 1.3}, 1000, 3, serialsim.Effects{SpectrumFaults: plant.SpectrumFaults{Fluorescence: 1, Spikes: 3, MixedCoverage: true}, Sample: 2})
	for b.Loop() {
		if _, err := Analyze(x, y, analysis.MoS2, DefaultOpts()); err != nil {
			b.Fatal(err)
		}
	}
}
