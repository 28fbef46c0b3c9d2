package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
)

// runRecipe runs the shipped recipe name with inputs on a fresh simulated
// rig, setup preparing the plant first (the precursor in the boat). A run
// the monitor latched for comms loss on a loaded machine is run once more,
// as runSynthesis does.
func runRecipe(t *testing.T, name, inputs string, setup func(*simBench)) e2eRun {
	t.Helper()
	run := runRecipeOnce(t, name, inputs, setup)
	if run.err != nil && run.bench.Audit.Tripped(envelope.TripCommsLoss) {
		t.Logf("comms loss tripped the monitor on the loaded machine (%v): once more on a fresh rig", run.err)
		run = runRecipeOnce(t, name, inputs, setup)
	}
	return run
}

func runRecipeOnce(t *testing.T, name, inputs string, setup func(*simBench)) e2eRun {
	t.Helper()
	b := newSimBench(t, e2eScale)
	if setup != nil {
		setup(b)
	}
	x := shippedExecutor(t, name)
	rec, err := x.Plan(Task{SessionID: "sess-e2e", Intent: "shipped " + name, Inputs: json.RawMessage(inputs)})
	if err != nil {
		t.Fatal(err)
	}
	clock, err := NewScaledClock(e2eScale)
	if err != nil {
		t.Fatal(err)
	}
	run := e2eRun{sink: &memSink{}, ckpt: &memCkpt{}, bench: b}
	env := &Env{Rig: b.rig(), Token: "token", Clock: clock, Sink: run.sink, Checkpoints: run.ckpt,
		ArtifactDir: t.TempDir(), SessionID: "sess-e2e"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	start := time.Now()
	run.res, run.err = Execute(ctx, rec, env, 0)
	run.wall = time.Since(start)
	return run
}

// noRefusals: the recipe never asked for what the envelope forbids (a stale
// reading's refusal, tried again on a new snapshot, is the rig's).
func noRefusals(t *testing.T, run e2eRun) {
	t.Helper()
	for _, e := range run.bench.Audit.Entries(envelope.DecisionRefused) {
		if e.Rule == envelope.RuleStale {
			continue
		}
		t.Errorf("refused: %+v", e)
	}
}

// TestE2EWS2FiveTemperatures: the shipped WS2 recipe, the plant's boat
// holding WO3, at five growth temperatures across its window (15 min
// each): every run names WS2 in the analysis, the plant grows more at
// every hotter step, and the film at the hot end is thicker, by the
// analysis's layer count, than at the cool end.
func TestE2EWS2FiveTemperatures(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	t.Parallel()
	temps := []float64{750, 775, 800, 825, 850}
	layers := make([]float64, len(temps))
	counts := make([]int, len(temps))
	ran := make([]bool, len(temps))
	// Each temperature on its own simulated rig, all at once: the runs wait
	// on the scaled clock far more than they compute.
	t.Run("temperatures", func(t *testing.T) {
		for i, temp := range temps {
			t.Run(fmt.Sprintf("%gC", temp), func(t *testing.T) {
				t.Parallel()
				run := runRecipe(t, "ws2-sulfurization",
					fmt.Sprintf(`{"substrate":"SiO2/Si","growth_temperature":%g,"growth_duration":"PT15M"}`, temp),
					func(b *simBench) {
						if err := b.Plant.SetPrecursor(plant.WO3); err != nil {
							t.Fatal(err)
						}
					})
				snap := run.bench.Plant.Snapshot()
				if run.err != nil {
					t.Fatalf("%g °C: %v (plant %.3f layers)", temp, run.err, snap.Layers)
				}
				out := run.res.Outputs
				ra := out["raman_analysis"].(map[string]any)
				t.Logf("%g °C: wall %v, plant %.3f layers (%s), layer count %v, distance %v, confidence %v", temp, run.wall.Round(time.Millisecond),
					snap.Layers, snap.Film.Material(), out["layer_count"], out["peak_distance"], out["confidence"])
				if run.res.Outputs["growth_temperature"].(map[string]any)["value"] != temp {
					t.Errorf("%g °C: growth_temperature %v", temp, out["growth_temperature"])
				}
				if m, _ := ra["method"].(string); m == "" {
					t.Errorf("no method")
				}
				var a []any
				for _, e := range run.sink.of(lifecycle.EventIntermediateResult) {
					if ir := e.(IntermediateResult); ir.ResultType == "raman_analysis" {
						a = append(a, ir.Data)
					}
				}
				if len(a) != 1 {
					t.Errorf("%g °C: %d raman_analysis results", temp, len(a))
				}
				layers[i] = snap.Layers
				counts[i] = out["layer_count"].(int)
				ran[i] = true
				checkLeftSafe(t, run)
				noRefusals(t, run)
			})
		}
	})
	if t.Failed() {
		return
	}
	for i, ok := range ran {
		if !ok {
			t.Skipf("%g °C did not run (-run picked some temperatures): no comparison across the window", temps[i])
		}
	}
	for i := 1; i < len(temps); i++ {
		if !(layers[i] > layers[i-1]) {
			t.Errorf("%g °C grew %.3f layers, not more than %.3f at the step below", temps[i], layers[i], layers[i-1])
		}
	}
	if !(counts[len(counts)-1] > counts[0]) {
		t.Fatalf("layer counts %v at 750…850 °C: the hot end is not thicker", counts)
	}
	for i := 1; i < len(counts); i++ {
		if counts[i] < counts[i-1] {
			t.Errorf("layer counts %v: thinner at a hotter step", counts)
		}
	}
}

// TestE2EAnneal: the shipped H2/Ar anneal runs to completion — no growth
// (the plant grows nothing without H2S), no spectrum — with the process
// log as its output, H2 and Ar closed and the heater off at the end.
func TestE2EAnneal(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	t.Parallel() // its own simulated rig
	run := runRecipe(t, "h2-anneal", `{"substrate":"sapphire","anneal_temperature":450,"anneal_duration":"PT10M"}`, nil)
	if run.err != nil {
		t.Fatalf("anneal: %v", run.err)
	}
	out := run.res.Outputs
	snap := run.bench.Plant.Snapshot()
	t.Logf("wall %v, peak %v, leak rate %v, %d log rows, plant layers %.3f", run.wall.Round(time.Millisecond), out["peak_temperature"],
		out["leak_rate_pa_per_min"], len(run.res.Outputs["process_log"].([]LogRow)), snap.Layers)
	if snap.Layers != 0 || out["raman_analysis"] != nil || out["peak_distance"] != nil {
		t.Fatalf("an anneal grows and measures nothing: %v, plant layers %v", out, snap.Layers)
	}
	if pt, _ := out["peak_temperature"].(map[string]any); pt["value"] != 450.0 {
		t.Errorf("peak_temperature %v", out["peak_temperature"])
	}
	sawH2 := false
	for _, r := range out["process_log"].([]LogRow) {
		if r.Flows["H2"] > 10 {
			sawH2 = true
		}
	}
	if !sawH2 {
		t.Error("no H2 flow in the process log")
	}
	names := map[string]bool{}
	for _, a := range run.res.Artifacts {
		names[a.Name] = true
	}
	if !names["growth_log"] || names["raw_spectrum"] {
		t.Errorf("artifacts %+v", run.res.Artifacts)
	}
	rd := run.bench.Monitor.Readings()
	for deadline := time.Now().Add(5 * time.Second); rd.Furnace.HeaterEnabled || rd.Switches["h2_valve"].On || rd.Switches["ar_valve"].On; rd = run.bench.Monitor.Readings() {
		if time.Now().After(deadline) {
			t.Fatalf("rig not left safe: heater %v, h2 valve %v, ar valve %v", rd.Furnace.HeaterEnabled, rd.Switches["h2_valve"].On, rd.Switches["ar_valve"].On)
		}
		time.Sleep(20 * time.Millisecond)
	}
	noRefusals(t, run)
}

// TestRecipeResumeIgnoresDisk: a run resumed from its checkpoint state runs
// the plan it pinned — with its recipe identity — even when the recipe the
// executor now has is another (an edited file).
func TestRecipeResumeIgnoresDisk(t *testing.T) {
	x := shippedExecutor(t, CVDName)
	rec, err := x.Plan(Task{Inputs: json.RawMessage(`{"target_material":"MoS2","substrate":"SiO2/Si","growth_duration":"PT20M"}`)})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := rec.State()
	orig := rec.(*recipeRun).st.Plan.Recipe
	srcs, _ := recipe.Shipped()
	var edited *recipe.Recipe
	for _, s := range srcs {
		if r, err := recipe.Load(s.Name, s.Data); err == nil && r.Name == CVDName {
			data := append([]byte{}, s.Data...)
			data = append(data, []byte("\n# edited on the rig\n")...)
			if edited, err = recipe.Load(s.Name, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	other, err := NewRecipeExecutor(edited)
	if err != nil {
		t.Fatal(err)
	}
	back, next, err := other.Resume(Task{}, st)
	if err != nil || next != 0 {
		t.Fatalf("resume: %v %d", err, next)
	}
	p := back.(*recipeRun).st.Plan
	if p.Recipe != orig || p.Recipe.SHA256 == edited.SHA256 || p.Phases[5].Hold.Duration != 20*time.Minute {
		t.Fatalf("resumed with %+v (edited %s)", p.Recipe, edited.SHA256)
	}
	// A session accepted with the original recipe is not planned with the
	// edited one.
	if _, err := other.Plan(Task{Inputs: json.RawMessage(`{"target_material":"MoS2","substrate":"SiO2/Si"}`), Recipe: &orig}); !errors.Is(err, ErrRecipeChanged) {
		t.Fatalf("plan with another recipe: %v", err)
	}
}
