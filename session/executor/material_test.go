package executor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/analysis"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/modelrouter"
)

// TestAnalyseNamesTheMaterial: the analyse phase of a plan that grows WS2
// names what the spectrum shows (raman_analysis.material) and compares it
// with the recipe's material, with the tier-1 fit alone and through the
// router: WS2 matches; MoS2 (a wrong precursor) is measured as MoS2 and
// warned of (audited), the session still completing; a mixture is
// warned of; a bare substrate completes with material none, layer count 0
// and a low confidence. Every outcome's outputs pass the recipe's output
// schema.
func TestAnalyseNamesTheMaterial(t *testing.T) {
	rt, err := modelrouter.New(modelrouter.DefaultRegistry(), modelrouter.Opts{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		film    plant.Film
		found   string
		matches bool
		layers  int
	}{
		{"WS2 as grown", plant.Film{WS2: 1}, "WS2", true, 1},
		{"MoS2 from a wrong precursor", plant.Film{MoS2: 2}, "MoS2", false, 2},
		{"a mixture", plant.Film{WS2: 2, MoS2: 1}, analysis.NameMixture, false, 0},
		{"nothing grown", plant.Film{}, analysis.NameNone, false, 0},
	}
	for _, an := range []struct {
		name string
		an   Analyzer
	}{{"tier 1", nil}, {"router", rt}} {
		for _, tt := range tests {
			t.Run(an.name+"/"+tt.name, func(t *testing.T) {
				b := newToolBench(t, an.an, tt.film)
				r, sink := b.run(t, recipeState{DataClass: "T1"}, time.Second)
				r.st.Plan.Phases[1].Analyse.Material = "WS2"
				r.st.Spectrum = simSpectrum(tt.film, 3)
				r.env.ArtifactDir = t.TempDir()
				r.rows = []LogRow{}
				if err := r.analyse(context.Background(), 1, &r.st.Plan.Phases[1]); err != nil {
					t.Fatalf("analyse: %v", err)
				}
				f := r.material()
				if f.Name != tt.found || f.MatchesRecipe != tt.matches || f.Expected != "WS2" {
					t.Fatalf("finding %+v", f)
				}
				var mismatch []Warning
				for _, e := range sink.of(lifecycle.EventWarning) {
					if w := e.(Warning); w.Code == CodeMaterialMismatch {
						mismatch = append(mismatch, w)
					}
				}
				if tt.matches != (len(mismatch) == 0) || (len(mismatch) > 0 && (!mismatch[0].Audit || mismatch[0].Details["found"] != tt.found)) {
					t.Fatalf("mismatch warnings %+v", mismatch)
				}
				res, err := r.Finish(context.Background(), r.env)
				if err != nil {
					t.Fatalf("finish: %v", err)
				}
				out := res.Outputs
				ra := out["raman_analysis"].(map[string]any)
				if out["material_matches_recipe"] != tt.matches || ra["material"].(MaterialFinding).Name != tt.found {
					t.Fatalf("outputs: matches %v, material %+v", out["material_matches_recipe"], ra["material"])
				}
				switch tt.found {
				case analysis.NameNone:
					if out["layer_count"] != 0 || f.Confidence > 0.3 || out["peak_distance"] != nil {
						t.Fatalf("none: %v, confidence %v", out, f.Confidence)
					}
				case analysis.NameMixture:
					if len(f.Fractions) != 2 {
						t.Fatalf("mixture fractions %v", f.Fractions)
					}
				default:
					if out["layer_count"] != tt.layers || r.st.Analysis.Material != analysis.Material(tt.found) || f.Confidence < 0.9 {
						t.Fatalf("layer count %v, analysed as %s, confidence %v", out["layer_count"], r.st.Analysis.Material, f.Confidence)
					}
				}
				js, _ := json.Marshal(ra["material"])
				t.Logf("%s", js)
			})
		}
	}
}

// TestE2EWS2RecipeWithMoO3: the shipped WS2 recipe on a simulated rig whose
// boat holds MoO3 (the simulator's default) grows MoS2; the session
// completes with the MoS2 measured, material MoS2 where WS2 was expected,
// material_matches_recipe false and an audited material_mismatch warning.
func TestE2EWS2RecipeWithMoO3(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	t.Parallel()
	run := runRecipe(t, "ws2-sulfurization", `{"substrate":"SiO2/Si","growth_temperature":750,"growth_duration":"PT10M"}`, nil)
	snap := run.bench.Plant.Snapshot()
	if run.err != nil {
		t.Fatalf("%v (plant %.3f layers of %s)", run.err, snap.Layers, snap.Film.Material())
	}
	out := run.res.Outputs
	f := out["raman_analysis"].(map[string]any)["material"].(MaterialFinding)
	t.Logf("plant %.3f layers of %s; finding %+v; layer count %v", snap.Layers, snap.Film.Material(), f, out["layer_count"])
	if snap.Film.Material() != "MoS2" || f.Name != "MoS2" || f.Expected != "WS2" || f.MatchesRecipe || out["material_matches_recipe"] != false {
		t.Fatalf("finding %+v, matches %v", f, out["material_matches_recipe"])
	}
	if lc, _ := out["layer_count"].(int); lc < 1 {
		t.Fatalf("layer count %v", out["layer_count"])
	}
	audited := 0
	for _, e := range run.sink.of(lifecycle.EventWarning) {
		if w := e.(Warning); w.Code == CodeMaterialMismatch && w.Audit {
			audited++
		}
	}
	if audited != 1 {
		t.Fatalf("%d audited material_mismatch warnings, want 1", audited)
	}
	checkLeftSafe(t, run)
}
