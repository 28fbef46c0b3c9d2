package executor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/modelrouter"
)

// measureAndAnalyse runs the plan's measure and analyse phases on b.
func measureAndAnalyse(ctx context.Context, t *testing.T, r *recipeRun) error {
	t.Helper()
	if err := r.measure(ctx, &r.st.Plan.Phases[0]); err != nil {
		t.Fatal(err)
	}
	return r.analyse(ctx, 1, &r.st.Plan.Phases[1])
}

func router(t *testing.T) *modelrouter.Router {
	t.Helper()
	rt, err := modelrouter.New(modelrouter.DefaultRegistry(), modelrouter.Opts{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

var acquireRef = envelope.ToolRef{Name: catalog.ToolAcquire, Version: catalog.BuiltinVersion}

// TestAnalysisThroughInvoker: the analyse phase calls raman.analyze
// through the Rig's tool pipeline (its statistics count the call), with
// the router as its handler, or the tier-1 fit without one.
func TestAnalysisThroughInvoker(t *testing.T) {
	if AnalysisToolRef.String() != AnalysisTool {
		t.Fatalf("AnalysisToolRef %s, AnalysisTool %s", AnalysisToolRef, AnalysisTool)
	}
	for _, tc := range []struct {
		name   string
		an     Analyzer
		routed bool
	}{{"router", router(t), true}, {"tier-1 fit", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newToolBench(t, tc.an, plant.Film{MoS2: 1})
			r, _ := b.run(t, recipeState{ThresholdConf: 0.8}, time.Second)
			if err := measureAndAnalyse(context.Background(), t, r); err != nil {
				t.Fatal(err)
			}
			st := b.iv.Stat(AnalysisToolRef)
			p := r.provenance()
			if st.Calls != 1 || st.Succeeded != 1 || p.Routed != tc.routed || p.Tool != AnalysisTool || r.st.Analysis.LayerCount != 1 {
				t.Fatalf("stats %+v, provenance %+v", st, p)
			}
			if n := b.iv.Stat(acquireRef).Calls; n != 1 {
				t.Fatalf("%d acquisitions", n)
			}
		})
	}
}

// TestReacquire: on rig-sim spectra where noise limits the answer (a 20 ms
// integration), the router advises a longer integration; the analyse phase
// re-acquires once through the spectrometer.acquire tool (the interlock
// sees it), analyses again, keeps the better analysis and reports both in
// the provenance, with a progress event. Without room in the recipe's
// range, without the time left, or without a router (no advice), it does
// not.
func TestReacquire(t *testing.T) {
	ctx := context.Background()
	t.Run("noise limited", func(t *testing.T) {
		b := newToolBench(t, router(t), plant.Film{MoS2: 1})
		r, sink := b.run(t, recipeState{ThresholdConf: 0.9}, 20*time.Millisecond)
		if err := measureAndAnalyse(ctx, t, r); err != nil {
			t.Fatal(err)
		}
		p := r.provenance()
		rq := p.Reacquired
		asked := b.sp.asked()
		if rq == nil || len(asked) != 2 || asked[0] != 20*time.Millisecond || asked[1] != rq.Integration || rq.From != 20*time.Millisecond ||
			rq.Integration <= rq.From || rq.Integration > 80*time.Millisecond || rq.After == nil || rq.Reason == "" {
			t.Fatalf("reacquired %+v, acquisitions %v", rq, asked)
		}
		if rq.Kept != "reacquired" || rq.After.Confidence <= rq.Before.Confidence || p.Confidence != rq.After.Confidence ||
			r.st.Spectrum.Integration != rq.Integration || r.st.Analysis.Confidence != p.Confidence {
			t.Fatalf("kept %s: before %+v after %+v, provenance %.3f, spectrum %v", rq.Kept, rq.Before, rq.After, p.Confidence, r.st.Spectrum.Integration)
		}
		if a, z := b.iv.Stat(acquireRef), b.iv.Stat(AnalysisToolRef); a.Calls != 2 || a.Succeeded != 2 || z.Calls != 2 || z.Succeeded != 2 {
			t.Fatalf("stats: acquire %+v, analyze %+v", a, z)
		}
		progressed := false
		for _, e := range sink.of(lifecycle.EventProgress) {
			if e.(Progress).Stage == "analysis" {
				progressed = true
			}
		}
		if !progressed {
			t.Fatal("no progress event of the re-acquisition")
		}
		out, err := json.Marshal(r.ramanOutput()["provenance"])
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Reacquired struct {
				Integration int64 `json:"integration_ns"`
				Before      struct {
					Confidence float64 `json:"confidence"`
				} `json:"before"`
				After struct {
					Confidence float64 `json:"confidence"`
				} `json:"after"`
				Kept string `json:"kept"`
			} `json:"reacquired"`
		}
		if err := json.Unmarshal(out, &back); err != nil || back.Reacquired.Kept != "reacquired" || back.Reacquired.Integration != int64(rq.Integration) {
			t.Fatalf("provenance in the outputs: %s (%v)", out, err)
		}
	})

	notDone := func(t *testing.T, b *toolBench, r *recipeRun, sink *memSink) {
		t.Helper()
		if p := r.provenance(); p.Reacquired != nil || p.Reacquire == nil || len(b.sp.asked()) != 1 {
			t.Fatalf("provenance %+v, acquisitions %v", p, b.sp.asked())
		}
		for _, e := range sink.of(lifecycle.EventWarning) {
			if w := e.(Warning); w.Code == "reacquire_advised" && w.Details["not_reacquired"] != "" {
				t.Log(w.Details["not_reacquired"])
				return
			}
		}
		t.Fatalf("no reacquire_advised warning saying why: %+v", sink.of(lifecycle.EventWarning))
	}
	t.Run("recipe range", func(t *testing.T) {
		b := newToolBench(t, router(t), plant.Film{MoS2: 1})
		r, sink := b.run(t, recipeState{ThresholdConf: 0.9}, 20*time.Millisecond)
		r.st.Plan.Phases[0].Measure.MaxIntegration = 20 * time.Millisecond // a constant integration
		if err := measureAndAnalyse(ctx, t, r); err != nil {
			t.Fatal(err)
		}
		notDone(t, b, r, sink)
	})
	t.Run("time left", func(t *testing.T) {
		b := newToolBench(t, router(t), plant.Film{MoS2: 1})
		r, sink := b.run(t, recipeState{ThresholdConf: 0.9}, 20*time.Millisecond)
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second) // less than the results' margin
		defer cancel()
		if err := measureAndAnalyse(tctx, t, r); err != nil {
			t.Fatal(err)
		}
		notDone(t, b, r, sink)
	})
	t.Run("no router", func(t *testing.T) {
		b := newToolBench(t, nil, plant.Film{MoS2: 1})
		r, _ := b.run(t, recipeState{ThresholdConf: 0.9}, 20*time.Millisecond)
		if err := measureAndAnalyse(ctx, t, r); err != nil {
			t.Fatal(err)
		}
		if p := r.provenance(); p.Reacquired != nil || p.Reacquire != nil || p.Routed || len(b.sp.asked()) != 1 {
			t.Fatalf("provenance %+v, acquisitions %v", p, b.sp.asked())
		}
	})
}
