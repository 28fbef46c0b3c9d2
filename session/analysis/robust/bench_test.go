package robust

import (
	"testing"

	"github.com/hcp-edge/hcp-edge/firmware-sim/plant"
	"github.com/hcp-edge/hcp-edge/firmware-sim/serialsim"
	"github.com/hcp-edge/hcp-edge/session/analysis"
)

func BenchmarkAnalyze(b *testing.B) {
	x, y, _ := spectrum(plant.Film{MoS2: 1.3}, 1000, 3, serialsim.Effects{SpectrumFaults: plant.SpectrumFaults{Fluorescence: 1, Spikes: 3, MixedCoverage: true}, Sample: 2})
	for b.Loop() {
		if _, err := Analyze(x, y, analysis.MoS2, DefaultOpts()); err != nil {
			b.Fatal(err)
		}
	}
}
