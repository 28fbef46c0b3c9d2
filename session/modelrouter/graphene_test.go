package modelrouter_test

import (
	"context"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
	mr "hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

// TestRoutesGraphene: a graphene spectrum goes through the router as the
// TMD spectra do: the tier-1 reading, tier 2 when it is not enough, an
// answer naming the layer count; bare copper is an answer with no layers,
// not an error.
func TestRoutesGraphene(t *testing.T) {
	r := newRouter(t, mr.DefaultRegistry(), mr.Opts{})
	for _, c := range []struct {
		name   string
		film   plant.Film
		layers int
	}{
		{"monolayer", plant.Film{Graphene: 1, GrapheneDG: 0.04}, 1},
		{"bilayer islands", plant.Film{Graphene: 1, GrapheneBilayer: 0.7, GrapheneDG: 0.05}, 2},
		{"bare copper", plant.Film{}, 0},
	} {
		x, n, tr := serialsim.GrapheneSpectrum(c.film, 1000, 3, serialsim.Effects{SpectrumFaults: plant.SpectrumFaults{Fluorescence: 1.5, Spikes: 4}, Sample: 11})
		y := make([]float64, len(n))
		for i, v := range n {
			y[i] = float64(v)
		}
		d, err := r.Analyze(context.Background(), mr.Request{Task: "t-" + c.name, Material: analysis.Graphene,
			Spectrum: device.Spectrum{Shift: x, Counts: y, Integration: time.Second}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %s tier %d: layer count %d, confidence %.3f (truth %d); quality %+v", c.name, d.Model, d.Tier, d.Answer.LayerCount, d.Answer.Confidence, tr.LayerCount, d.Quality)
		if d.Answer.LayerCount != c.layers || tr.LayerCount != c.layers {
			t.Fatalf("%s: answer %+v, truth %+v", c.name, d.Answer, tr)
		}
		if c.layers > 0 && (d.Fit.Graphene == nil || d.Answer.Material != analysis.Graphene) {
			t.Fatalf("%s: fit %+v answer %+v", c.name, d.Fit, d.Answer)
		}
	}
}

// TestRemoteNamesGraphene: a remote model asked about a graphene spectrum
// is told the material and the bands the tier-1 reading found, and its
// answer naming graphene is kept (the answer schema's materials are the
// analysis's).
func TestRemoteNamesGraphene(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	var got mr.Description
	srv.SetAnswer(func(d mr.Description) mr.Answer {
		got = d
		return remoteStandIn(d)
	})
	reg := mr.DefaultRegistry()
	reg.Models = append(reg.Models, mr.Model{ID: "remote", Tier: 3, Kind: mr.OpenAI, Instances: []string{srv.Base()}, Name: "stand-in",
		ContextWindow: 8192, CostIn: 0.005, CostOut: 0.015, Latency: 200 * time.Millisecond, Cleared: mr.T2})
	r := newRouter(t, reg, mr.Opts{DailyBudget: 10})
	x, n, tr := serialsim.GrapheneSpectrum(plant.Film{Graphene: 1, GrapheneBilayer: 0.8, GrapheneDG: 0.05}, 1000, 4, serialsim.Effects{})
	y := make([]float64, len(n))
	for i, v := range n {
		y[i] = float64(v)
	}
	d, err := r.Analyze(context.Background(), mr.Request{Task: "t-remote", Material: analysis.Graphene, Hint: mr.HintBest,
		Spectrum: device.Spectrum{Shift: x, Counts: y, Integration: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Tier != 3 || d.Fallback || d.Answer.Material != analysis.Graphene || d.Answer.LayerCount != tr.LayerCount || tr.LayerCount != 2 {
		t.Fatalf("decision %+v (truth %+v)", d, tr)
	}
	if got.Material != analysis.Graphene || got.Bands == nil || got.Peaks == nil || got.Peaks.FitLayers != 2 || got.Window[0] > 1200 || got.Window[1] < 2900 {
		t.Fatalf("description: material %q bands %v peaks %+v window %v", got.Material, got.Bands, got.Peaks, got.Window)
	}
}
