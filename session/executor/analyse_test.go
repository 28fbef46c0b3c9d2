package executor

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
	"hcp-edge/session/recipe"
)

// simSpectrum is a simulated acquisition of film as the driver gives it.
func simSpectrum(film plant.Film, seed uint64) *device.Spectrum {
	x, c, _ := serialsim.SpectrumWith(film, 1000, seed, serialsim.Effects{Sample: seed})
	y := make([]float64, len(c))
	for i := range c {
		y[i] = float64(c[i])
	}
	return &device.Spectrum{Shift: x, Counts: y, Integration: time.Second}
}

// auditLog keeps the router's events.
type auditLog struct {
	mu sync.Mutex
	ev []modelrouter.Event
}

func (a *auditLog) Audit(e modelrouter.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ev = append(a.ev, e)
}

func (a *auditLog) count(kind, task string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.ev {
		if e.Kind == kind && e.Task == task {
			n++
		}
	}
	return n
}

// analyseWith runs the analyse phase of a plan built from st on a
// simulated monolayer through the analysis tool, an its handler, and
// returns the run and its events.
func analyseWith(t *testing.T, an Analyzer, st recipeState) (*recipeRun, *memSink, error) {
	t.Helper()
	b := newToolBench(t, an, plant.Film{MoS2: 1})
	r, sink := b.run(t, st, time.Second)
	r.st.Spectrum = simSpectrum(plant.Film{MoS2: 1}, 7)
	err := r.analyse(context.Background(), 1, &r.st.Plan.Phases[1])
	return r, sink, err
}

// run is a run of a plan that measures for integration (its recipe's
// range 10 ms to 30 s) and analyses a MoS2 monolayer, on b's rig.
func (b *toolBench) run(t *testing.T, st recipeState, integration time.Duration) (*recipeRun, *memSink) {
	t.Helper()
	st.Plan = &recipe.Plan{Phases: []recipe.Phase{
		{Kind: recipe.KindMeasure, Name: "measure", Stage: "characterization",
			Measure: &recipe.Measure{Integration: integration, MinIntegration: 10 * time.Millisecond, MaxIntegration: 30 * time.Second}},
		{Kind: recipe.KindAnalyse, Name: "analyse", Stage: "analysis", Analyse: &recipe.Analyse{Material: "MoS2", TargetLayers: 1}},
	}}
	r := newRecipeRun(st)
	sink := &memSink{}
	clock, _ := NewScaledClock(1)
	r.env = &Env{Rig: b.rig, Token: "tok", Clock: clock, Sink: sink, Checkpoints: &memCkpt{}, SessionID: "sess-an"}
	if err := r.env.defaults(); err != nil {
		t.Fatal(err)
	}
	return r, sink
}

// TestAnalyseRoutes: the analyse phase asks the router with the task's
// threshold, hint, data class and session, and the outputs say which
// model decided (raman_analysis.provenance).
func TestAnalyseRoutes(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	reg := modelrouter.DefaultRegistry()
	reg.Models = append(reg.Models, modelrouter.Model{ID: "remote-best", Tier: 3, Kind: modelrouter.OpenAI, Instances: []string{srv.Base()},
		Name: "m", ContextWindow: 8192, CostIn: 0.001, CostOut: 0.002, Latency: 100 * time.Millisecond, Cleared: modelrouter.T2})
	aud := &auditLog{}
	rt, err := modelrouter.New(reg, modelrouter.Opts{Auditor: aud, Seed: 1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	// best on T1 data: the remote model decides.
	r, _, err := analyseWith(t, rt, recipeState{ThresholdConf: 0.5, ModelHint: "best", DataClass: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	p := r.provenance()
	if !p.Routed || p.Model != "remote-best" || p.Tier != 3 || p.Tool != AnalysisTool || r.st.Analysis.Confidence != p.Confidence ||
		r.st.Analysis.LayerCount != 1 || len(srv.Requests()) != 1 {
		t.Fatalf("provenance %+v, analysis %+v, %d requests", p, r.st.Analysis, len(srv.Requests()))
	}
	out := r.ramanOutput()
	if b, err := json.Marshal(out["provenance"]); err != nil || !json.Valid(b) {
		t.Fatalf("provenance in the outputs: %v", err)
	}
	if aud.count(modelrouter.EventInvocation, "sess-an") == 0 {
		t.Fatal("no invocation audited under the session")
	}

	// best on T3 data: the remote model is refused (audited), the local
	// tier decides, and the server saw nothing more.
	r, _, err = analyseWith(t, rt, recipeState{ThresholdConf: 0.5, ModelHint: "best", DataClass: "T3"})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.provenance(); p.Model == "remote-best" || p.Tier > 2 || len(srv.Requests()) != 1 || aud.count(modelrouter.EventRefused, "sess-an") != 1 {
		t.Fatalf("T3: provenance %+v, %d requests, %d refusals", p, len(srv.Requests()), aud.count(modelrouter.EventRefused, "sess-an"))
	}

	// Every remote answer fails: the local answer stands, with a warning
	// event, and the analysis is not lost.
	srv.SetDefault(modeltest.ServerError)
	r, sink, err := analyseWith(t, rt, recipeState{ThresholdConf: 0.5, ModelHint: "best", DataClass: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	p = r.provenance()
	if p.Tier == 3 || !p.Fallback || r.st.Analysis.LayerCount != 1 {
		t.Fatalf("fallback: provenance %+v", p)
	}
	warned := false
	for _, e := range sink.of(lifecycle.EventWarning) {
		if w := e.(Warning); w.Code == "analysis_fallback" {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no analysis_fallback warning: %+v", sink.of(lifecycle.EventWarning))
	}
}

// TestAnalyseWithoutRouter: no Analyzer, the tier-1 fit alone, with its
// provenance.
func TestAnalyseWithoutRouter(t *testing.T) {
	r, _, err := analyseWith(t, nil, recipeState{})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.provenance(); p.Routed || p.Model != "local-fit" || p.Tier != 1 || p.LayerCount != r.st.Analysis.LayerCount {
		t.Fatalf("provenance %+v", p)
	}
}
