package analysis

import (
	"errors"
	"math"
	"testing"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
)

// TestIdentifySimulatedFilms: what the simulated spectrometer shows of a
// film is named from its band positions: each material alone, confidently;
// a film of both a mixture with each material's share; a bare substrate
// none, with low confidence.
func TestIdentifySimulatedFilms(t *testing.T) {
	tests := []struct {
		name    string
		film    plant.Film
		want    string
		minConf float64
	}{
		{"WS2 monolayer", plant.Film{WS2: 1}, "WS2", 0.9},
		{"WS2 1.3 layers", plant.Film{WS2: 1.3}, "WS2", 0.9},
		{"WS2 bulk", plant.Film{WS2: 6}, "WS2", 0.9},
		{"MoS2 monolayer", plant.Film{MoS2: 1}, "MoS2", 0.9},
		{"MoS2 bulk", plant.Film{MoS2: 5}, "MoS2", 0.9},
		{"MoS2 under WS2", plant.Film{MoS2: 1, WS2: 2}, NameMixture, 0.5},
		{"WS2 under MoS2", plant.Film{MoS2: 3, WS2: 1}, NameMixture, 0.5},
		{"bare substrate", plant.Film{}, NameNone, 0},
		{"below detection", plant.Film{WS2: 0.1}, NameNone, 0},
	}
	for _, tt := range tests {
		for seed := uint64(1); seed <= 3; seed++ {
			id, err := IdentifyFor(simulated(tt.film, seed))
			if err != nil {
				t.Fatalf("%s seed %d: %v", tt.name, seed, err)
			}
			if id.Name != tt.want || id.Confidence < tt.minConf {
				t.Fatalf("%s seed %d: %+v, want %s with confidence ≥ %g", tt.name, seed, id, tt.want, tt.minConf)
			}
			switch id.Name {
			case NameNone:
				if id.Confidence != NoneConfidence || len(id.Bands) != 0 || id.Reason == "" {
					t.Errorf("%s: %+v", tt.name, id)
				}
			case NameMixture:
				sum := 0.0
				for _, f := range id.Fractions {
					sum += f
				}
				if len(id.Fractions) != 2 || math.Abs(sum-1) > 1e-3 || id.Reason == "" || len(id.Bands) != 2 {
					t.Errorf("%s: %+v", tt.name, id)
				}
				// The thicker film gives the stronger bands.
				thick := MoS2
				if tt.film.WS2 > tt.film.MoS2 {
					thick = WS2
				}
				if id.Strongest() != thick || id.Fractions[string(thick)] <= 0.5 {
					t.Errorf("%s: strongest %s, fractions %v", tt.name, id.Strongest(), id.Fractions)
				}
			default:
				if len(id.Fractions) != 0 || len(id.Bands) != 1 || string(id.Bands[0].Material) != id.Name || !id.Single() {
					t.Errorf("%s: %+v", tt.name, id)
				}
			}
		}
	}
}

// TestIdentifyUnusable: a spectrum no window can read is an error, not
// "none".
func TestIdentifyUnusable(t *testing.T) {
	if _, err := IdentifyFor(device.Spectrum{Shift: []float64{1, 2}, Counts: []float64{1, 2}}); !errors.Is(err, ErrNoData) {
		t.Fatalf("err %v", err)
	}
}

func TestLayerCountOf(t *testing.T) {
	tests := []struct {
		layers float64
		count  int
		bulk   bool
	}{
		{0, 0, false}, {-1, 0, false}, {math.NaN(), 0, false},
		{0.3, 1, false}, {1, 1, false}, {1.32, 1, false}, {1.5, 1, false}, {1.51, 2, false},
		{2.01, 2, false}, {3.0, 3, false}, {3.49, 3, false}, {3.51, 4, true}, {4.4, 4, true}, {14.3, 4, true},
	}
	for _, tt := range tests {
		if c, b := LayerCountOf(tt.layers); c != tt.count || b != tt.bulk {
			t.Errorf("LayerCountOf(%g) = %d, %v; want %d, %v", tt.layers, c, b, tt.count, tt.bulk)
		}
	}
	if BulkLayerCount != bands[len(bands)-1].Layers || BulkLayerCount != ws2Bands[len(ws2Bands)-1].Layers {
		t.Fatal("BulkLayerCount is not the analysis' last band")
	}
}
