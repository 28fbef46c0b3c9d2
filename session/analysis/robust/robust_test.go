package robust

import (
	"fmt"
	"testing"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
)

func spectrum(film plant.Film, ms int, seed uint64, e serialsim.Effects) ([]float64, []float64, plant.Truth) {
	x, c, tr := serialsim.SpectrumWith(film, ms, seed, e)
	y := make([]float64, len(c))
	for i := range c {
		y[i] = float64(c[i])
	}
	return x, y, tr
}

func TestRobustLayers(t *testing.T) {
	hard := serialsim.Effects{SpectrumFaults: plant.SpectrumFaults{Fluorescence: 2, Spikes: 6, MixedCoverage: true}, Sample: 5}
	for _, c := range []struct {
		name string
		film plant.Film
		mat  analysis.Material
		e    serialsim.Effects
	}{
		{"1L MoS2 plain", plant.Film{MoS2: 1}, analysis.MoS2, serialsim.Effects{}},
		{"2L MoS2 hard", plant.Film{MoS2: 2}, analysis.MoS2, hard},
		{"3L WS2 hard", plant.Film{WS2: 3}, analysis.WS2, hard},
		{"1.3L MoS2 mixed", plant.Film{MoS2: 1.3}, analysis.MoS2, hard},
		{"1.8L WS2 mixed", plant.Film{WS2: 1.8}, analysis.WS2, hard},
		{"2L WS2 auto", plant.Film{WS2: 2}, analysis.Auto, hard},
		{"bulk MoS2 saturated", plant.Film{MoS2: 5}, analysis.MoS2, serialsim.Effects{SpectrumFaults: plant.SpectrumFaults{FullWell: 6000}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, y, tr := spectrum(c.film, 2000, 9, c.e)
			r, err := Analyze(x, y, c.mat, DefaultOpts())
			if err != nil {
				t.Fatal(err)
			}
			if !r.Found || r.LayerCount != tr.LayerCount {
				t.Fatalf("got %d layers (found %v, %s; coverage %+v), truth %+v", r.LayerCount, r.Found, r.Reason, r.Coverage, tr)
			}
			for _, cv := range r.Coverage {
				if want := tr.Coverage[cv.Layers]; len(tr.Coverage) > 1 && abs(cv.Fraction-want) > 0.15 {
					t.Errorf("coverage of %dL %.2f±%.2f, truth %.2f", cv.Layers, cv.Fraction, cv.Err, want)
				}
			}
			t.Logf("%s: %dL conf %.2f cov %s spikes %d sat %d si %.2f", c.film.Material(), r.LayerCount, r.Confidence, fmtCov(r.Coverage), r.Spikes, r.Saturated, r.SiPosition)
		})
	}
}

func fmtCov(c []Coverage) string {
	s := ""
	for _, v := range c {
		s += fmt.Sprintf("%dL:%.2f±%.2f ", v.Layers, v.Fraction, v.Err)
	}
	return s
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestALSFollowsSlope(t *testing.T) {
	n := 400
	y := make([]float64, n)
	for i := range y {
		y[i] = 1000 + 3*float64(i) + 0.004*float64(i*i)
		if i == 200 {
			y[i] += 5000
		}
	}
	z := als(y, make([]bool, n), 1e5, 0.01, 10)
	for _, i := range []int{50, 150, 200, 350} {
		want := 1000 + 3*float64(i) + 0.004*float64(i*i)
		if abs(z[i]-want) > 0.02*want {
			t.Fatalf("z[%d] %.1f, want %.1f", i, z[i], want)
		}
	}
}
