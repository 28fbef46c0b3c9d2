package modelrouter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
	mr "hcp-edge/session/modelrouter"
	"hcp-edge/session/modelrouter/modeltest"
)

// spectrum is a simulated acquisition as the driver gives it.
func spectrum(film plant.Film, ms int, seed uint64, f plant.SpectrumFaults) device.Spectrum {
	x, c, _ := serialsim.SpectrumWith(film, ms, seed, serialsim.Effects{SpectrumFaults: f, Sample: seed})
	y := make([]float64, len(c))
	for i := range c {
		y[i] = float64(c[i])
	}
	return device.Spectrum{Shift: x, Counts: y, Integration: time.Duration(ms) * time.Millisecond}
}

// registry is the two local models plus remote ones at the given servers.
func registry(remotes ...mr.Model) mr.Registry {
	r := mr.DefaultRegistry()
	r.Models = append(r.Models, remotes...)
	return r
}

func remoteModel(id string, tier int, cleared mr.DataClass, urls ...string) mr.Model {
	return mr.Model{ID: id, Tier: tier, Kind: mr.OpenAI, Instances: urls, Name: "test-model", ContextWindow: 8192,
		CostIn: 0.01, CostOut: 0.03, Latency: 100 * time.Millisecond, Cleared: cleared}
}

// events is an Auditor keeping what it is told.
type events struct {
	mu sync.Mutex
	ev []mr.Event
}

func (e *events) Audit(ev mr.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ev = append(e.ev, ev)
}

func (e *events) kinds(kind string) []mr.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []mr.Event
	for _, v := range e.ev {
		if v.Kind == kind {
			out = append(out, v)
		}
	}
	return out
}

func newRouter(t *testing.T, reg mr.Registry, o mr.Opts) *mr.Router {
	t.Helper()
	if o.BackoffBase == 0 {
		o.BackoffBase, o.BackoffMax = 5*time.Millisecond, 20*time.Millisecond
	}
	o.Seed = 1
	r, err := mr.New(reg, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryProblems(t *testing.T) {
	reg := registry(
		mr.Model{ID: "local-fit", Tier: 4, Kind: "gpu", Cleared: "T9"},
		mr.Model{ID: "r", Tier: 3, Kind: mr.OpenAI, Instances: []string{"ftp://x"}, Name: "m", ContextWindow: 100, Cleared: mr.T1, APIKeyFile: "a", APIKeyEnv: "B"},
	)
	ps := reg.Problems()
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"models[2].id: \"local-fit\" already used", "models[2].tier: 4", "models[2].kind", "models[2].data_class_cleared",
		"models[3].instances[0]", "models[3].context_window", "models[3].api_key_file"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in\n%s", want, all)
		}
	}
	if err := reg.Validate(); !errors.Is(err, mr.ErrBadRegistry) {
		t.Fatal(err)
	}
	if err := mr.DefaultRegistry().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseAnswer(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		ok        bool
	}{
		{"valid", `{"layer_count":2,"coverage":[{"layers":2,"fraction":1}],"confidence":0.9,"rationale":"d=21.5"}`, true},
		{"material", `{"material":"WS2","layer_count":1,"coverage":[],"confidence":0.5,"rationale":""}`, true},
		{"graphene", `{"material":"graphene","layer_count":2,"coverage":[{"layers":1,"fraction":0.4},{"layers":2,"fraction":0.6}],"confidence":0.8,"rationale":"2D/G 0.9"}`, true},
		{"unknown material", `{"material":"hBN","layer_count":1,"coverage":[],"confidence":0.5,"rationale":""}`, false},
		{"string count", `{"layer_count":"two","coverage":[],"confidence":0.9,"rationale":""}`, false},
		{"confidence above 1", `{"layer_count":2,"coverage":[],"confidence":7,"rationale":""}`, false},
		{"missing rationale", `{"layer_count":2,"coverage":[],"confidence":0.9}`, false},
		{"extra field", `{"layer_count":2,"coverage":[],"confidence":0.9,"rationale":"","x":1}`, false},
		{"not json", `two layers`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := mr.ParseAnswer([]byte(c.raw))
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
		})
	}
}

func TestRouteCleanStaysAtTier1(t *testing.T) {
	r := newRouter(t, mr.DefaultRegistry(), mr.Opts{})
	d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 2}, 1000, 1, plant.SpectrumFaults{}), Material: analysis.MoS2})
	if err != nil {
		t.Fatal(err)
	}
	if d.Tier != 1 || d.Answer.LayerCount != 2 || len(d.Attempts) != 1 {
		t.Fatalf("decision %+v", d)
	}
}

func TestRoutePoorQualityEscalatesLocally(t *testing.T) {
	r := newRouter(t, mr.DefaultRegistry(), mr.Opts{})
	s := spectrum(plant.Film{MoS2: 1.3}, 1000, 2, plant.SpectrumFaults{Fluorescence: 2, Spikes: 5, MixedCoverage: true})
	d, err := r.Analyze(context.Background(), mr.Request{Spectrum: s, Material: analysis.MoS2})
	if err != nil {
		t.Fatal(err)
	}
	if d.Tier != 2 || d.Answer.LayerCount != 1 || len(d.Answer.Coverage) != 2 || !d.Quality.Poor() {
		t.Fatalf("decision %+v", d)
	}
	// minimize_cost keeps a confident tier-1 answer whatever the quality
	d, _ = r.Analyze(context.Background(), mr.Request{Spectrum: s, Material: analysis.MoS2, Policy: mr.MinimizeCost, ConfidenceThreshold: 0.01})
	if d.Tier != 1 {
		t.Fatalf("minimize_cost escalated: %+v", d)
	}
}

func TestRouteBestGoesRemote(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T2, srv.Base())), mr.Opts{})
	s := spectrum(plant.Film{WS2: 2}, 1000, 3, plant.SpectrumFaults{})
	d, err := r.Analyze(context.Background(), mr.Request{Spectrum: s, Material: analysis.WS2, Hint: mr.HintBest, Task: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Model != "remote-best" || d.Answer.LayerCount != 2 || d.Cost <= 0 || d.Instance != srv.Base() {
		t.Fatalf("decision %+v", d)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[1].Content, `"spectrum"`) {
		t.Fatalf("requests %+v", reqs)
	}
	// fast never leaves the agent
	d, _ = r.Analyze(context.Background(), mr.Request{Spectrum: s, Material: analysis.WS2, Hint: mr.HintFast, ConfidenceThreshold: 0.999})
	if d.Tier > 2 || len(srv.Requests()) != 1 {
		t.Fatalf("fast went remote: %+v", d)
	}
}

func TestDataClassRefusedAndAudited(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	ev := &events{}
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T2, srv.Base())), mr.Opts{Auditor: ev})
	for _, class := range []mr.DataClass{mr.T3, mr.T4} {
		d, err := r.Analyze(context.Background(), mr.Request{Task: "secret", Spectrum: spectrum(plant.Film{MoS2: 1}, 1000, 4, plant.SpectrumFaults{}),
			Material: analysis.MoS2, Hint: mr.HintBest, DataClass: class})
		if err != nil {
			t.Fatal(err)
		}
		if d.Tier == 3 || d.Answer.LayerCount != 1 {
			t.Fatalf("%s: %+v", class, d)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("T3/T4 data sent to a model cleared for T2: %d requests", n)
	}
	if got := ev.kinds(mr.EventRefused); len(got) != 2 || got[0].Task != "secret" || got[0].Model != "remote-best" {
		t.Fatalf("audit %+v", got)
	}
}

func TestCostBudgetRefuses(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T4, srv.Base())), mr.Opts{})
	d, _ := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 1}, 1000, 5, plant.SpectrumFaults{}),
		Material: analysis.MoS2, Hint: mr.HintBest, CostBudget: 1e-6})
	if d.Tier == 3 || len(srv.Requests()) != 0 {
		t.Fatalf("over budget went remote: %+v", d)
	}
	if !strings.Contains(d.Attempts[len(d.Attempts)-1].Error, "over budget") {
		t.Fatalf("attempts %+v", d.Attempts)
	}
}

// TestFallbacks: each failing behaviour of the first remote ends in the
// second remote's answer (or the local one), never in a lost analysis.
func TestFallbacks(t *testing.T) {
	for _, c := range []struct {
		b         modeltest.Behaviour
		outcome   mr.Outcome
		toSecond  bool // the second remote model is asked
		firstReqs int
	}{
		{modeltest.ServerError, mr.ServerError, true, 3},
		{modeltest.RateLimited, mr.RateLimit, true, 1}, // Retry-After 60 s: not waited for
		{modeltest.Garbage, mr.BadAnswer, true, 1},
		{modeltest.SchemaBreaking, mr.BadAnswer, true, 1},
		{modeltest.Late, mr.Timeout, true, 3},
		{modeltest.BadRequest, mr.InvalidRequest, false, 1},
	} {
		t.Run(c.b.String(), func(t *testing.T) {
			a, b := modeltest.New(), modeltest.New()
			defer a.Close()
			defer b.Close()
			a.SetDefault(c.b)
			a.SetRetryAfter(60)
			a.SetDelay(0, 2*time.Second)
			ev := &events{}
			first := remoteModel("remote-3", 3, mr.T4, a.Base())
			second := remoteModel("remote-2", 3, mr.T4, b.Base())
			first.Latency, first.CostIn = 50*time.Millisecond, 0.02 // the best first: tier, then price
			r := newRouter(t, registry(first, second), mr.Opts{Auditor: ev, Breaker: mr.BreakerOpts{Failures: 10}})
			d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 3}, 1000, 6, plant.SpectrumFaults{}),
				Material: analysis.MoS2, Hint: mr.HintBest})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(a.Requests()); n != c.firstReqs {
				t.Errorf("first model got %d requests, want %d", n, c.firstReqs)
			}
			if got := len(b.Requests()) > 0; got != c.toSecond {
				t.Fatalf("second asked %v, want %v: %+v", got, c.toSecond, d)
			}
			if d.Answer.LayerCount != 3 || !d.Fallback || len(d.Warnings) == 0 {
				t.Fatalf("decision %+v", d)
			}
			if c.toSecond && d.Model != "remote-2" {
				t.Fatalf("answer from %s", d.Model)
			}
			if !c.toSecond && d.Model != "local-robust" {
				t.Fatalf("answer from %s", d.Model)
			}
			found := false
			for _, at := range d.Attempts {
				found = found || (at.Model == "remote-3" && at.Outcome == c.outcome)
			}
			if !found {
				t.Fatalf("no %s attempt: %+v", c.outcome, d.Attempts)
			}
			if len(ev.kinds(mr.EventFallback)) != 1 {
				t.Fatalf("fallback not audited: %+v", ev.ev)
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	srv.Script(modeltest.RateLimited)
	srv.SetRetryAfter(1)
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T4, srv.Base())), mr.Opts{})
	t0 := time.Now()
	d, _ := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 1}, 1000, 7, plant.SpectrumFaults{}),
		Material: analysis.MoS2, Hint: mr.HintBest})
	if el := time.Since(t0); el < time.Second {
		t.Fatalf("retried after %v, before the server's Retry-After of 1 s", el)
	}
	if d.Model != "remote-best" || len(srv.Requests()) != 2 || d.Fallback {
		t.Fatalf("decision %+v", d)
	}
}

// TestFaultRunCircuit: a run of analyses against a remote that fails, then
// recovers: no analysis lost, the circuit opens, is probed half-open after
// its cooldown, and closes; every fallback audited.
func TestFaultRunCircuit(t *testing.T) {
	bad, good := modeltest.New(), modeltest.New()
	defer bad.Close()
	defer good.Close()
	bad.SetDefault(modeltest.ServerError)
	ev := &events{}
	m := remoteModel("remote-best", 3, mr.T4, bad.Base())
	r := newRouter(t, registry(m), mr.Opts{Auditor: ev, Retries: -1, Breaker: mr.BreakerOpts{Failures: 3, Cooldown: 200 * time.Millisecond}})
	req := mr.Request{Spectrum: spectrum(plant.Film{WS2: 1}, 1000, 8, plant.SpectrumFaults{}), Material: analysis.WS2, Hint: mr.HintBest}
	lost, fallbacks := 0, 0
	run := func(n int) {
		for range n {
			d, err := r.Analyze(context.Background(), req)
			if err != nil || d.Answer.LayerCount != 1 {
				lost++
			}
			if d.Fallback {
				fallbacks++
			}
		}
	}
	run(6)
	if st := r.Circuits()[0].State; st != "open" {
		t.Fatalf("circuit %s after 6 failing analyses", st)
	}
	if n := len(bad.Requests()); n != 3 {
		t.Fatalf("%d requests reached the failing instance; the open circuit should stop them after 3", n)
	}
	bad.SetDefault(modeltest.Well)
	time.Sleep(250 * time.Millisecond)
	run(3)
	if st := r.Circuits()[0].State; st != "closed" {
		t.Fatalf("circuit %s after recovery", st)
	}
	if lost != 0 {
		t.Fatalf("%d analyses lost", lost)
	}
	if len(ev.kinds(mr.EventFallback)) != fallbacks || fallbacks != 6 {
		t.Fatalf("fallbacks %d, audited %d", fallbacks, len(ev.kinds(mr.EventFallback)))
	}
	var trans []string
	for _, e := range ev.kinds(mr.EventCircuit) {
		trans = append(trans, e.Detail)
	}
	if got := strings.Join(trans, ", "); got != "closed → open, open → half-open, half-open → closed" {
		t.Fatalf("circuit transitions %q", got)
	}
	st := r.Tracker().Stats()
	var remote mr.ModelStats
	for _, s := range st {
		if s.Model == "remote-best" {
			remote = s
		}
	}
	if remote.Calls != 6 || remote.OK != 3 || remote.Outcomes[mr.ServerError] != 3 || remote.Outcomes[mr.Refused] != 3 || remote.Cost <= 0 || remote.P50 <= 0 {
		t.Fatalf("tracker %+v", remote)
	}
}

// TestFaultRunMixed: many analyses against two instances answering at
// random with every failure: none lost, every answer schema-valid.
func TestFaultRunMixed(t *testing.T) {
	a, b := modeltest.New(), modeltest.New()
	defer a.Close()
	defer b.Close()
	bs := []modeltest.Behaviour{modeltest.Well, modeltest.ServerError, modeltest.Garbage, modeltest.SchemaBreaking, modeltest.RateLimited, modeltest.Well}
	for i := range 60 {
		a.Script(bs[i%len(bs)])
		b.Script(bs[(i*7+3)%len(bs)])
	}
	a.SetRetryAfter(0)
	b.SetRetryAfter(0)
	m := remoteModel("remote-best", 3, mr.T4, a.Base(), b.Base())
	r := newRouter(t, registry(m), mr.Opts{Breaker: mr.BreakerOpts{Failures: 4, Cooldown: 20 * time.Millisecond}})
	n := 25
	if testing.Short() {
		n = 10
	}
	for i := range n {
		film := plant.Film{MoS2: float64(1 + i%4)}
		d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(film, 1000, uint64(100+i), plant.SpectrumFaults{}), Material: analysis.MoS2, Hint: mr.HintBest})
		if err != nil {
			t.Fatalf("analysis %d lost: %v", i, err)
		}
		if d.Answer.LayerCount != film.Truth().LayerCount {
			t.Fatalf("analysis %d: %+v", i, d)
		}
	}
}

func TestReacquireWhenNoiseLimits(t *testing.T) {
	r := newRouter(t, mr.DefaultRegistry(), mr.Opts{})
	d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 1}, 20, 9, plant.SpectrumFaults{}), Material: analysis.MoS2, ConfidenceThreshold: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if d.Reacquire == nil || d.Reacquire.Integration <= 20*time.Millisecond {
		t.Fatalf("no re-acquisition advised: %+v", d)
	}
}

func TestTrackerRecommendations(t *testing.T) {
	tr := mr.NewTracker(nil)
	for i := range 20 {
		o := mr.OK
		if i%2 == 0 {
			o = mr.ServerError
		}
		tr.Record(mr.Invocation{Model: "flaky", Tier: 3, Latency: time.Duration(i) * time.Millisecond, Outcome: o, Cost: 0.001, Confidence: 0.9})
	}
	s := tr.Stats()[0]
	if s.Calls != 20 || s.OK != 10 || s.P50 != 9*time.Millisecond || s.P99 != 19*time.Millisecond || tr.SpentToday() < 0.0199 {
		t.Fatalf("stats %+v", s)
	}
	recs := tr.Recommendations(mr.Registry{})
	if len(recs) == 0 || !strings.Contains(recs[0], "flaky fails 50 %") {
		t.Fatalf("recommendations %q", recs)
	}
}

// TestRateLimitFallsBack: a model at its rpm is not sent the request; the
// analysis falls back and is not lost.
func TestRateLimitFallsBack(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	m := remoteModel("remote-best", 3, mr.T4, srv.Base())
	m.RPM = 1
	r := newRouter(t, registry(m), mr.Opts{})
	req := mr.Request{Spectrum: spectrum(plant.Film{MoS2: 2}, 1000, 10, plant.SpectrumFaults{}), Material: analysis.MoS2, Hint: mr.HintBest}
	for i := range 3 {
		d, err := r.Analyze(context.Background(), req)
		if err != nil || d.Answer.LayerCount != 2 {
			t.Fatalf("analysis %d: %v %+v", i, err, d)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests at rpm 1", n)
	}
	if s := r.Tracker().Stats(); s[len(s)-1].Outcomes[mr.Refused] != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestConcurrentAnalyze: the router is safe for concurrent use (run with
// -race): analyses in parallel against a remote that fails half the time.
func TestConcurrentAnalyze(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	for i := range 40 {
		if i%2 == 0 {
			srv.Script(modeltest.ServerError)
		} else {
			srv.Script(modeltest.Well)
		}
	}
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T4, srv.Base())), mr.Opts{Breaker: mr.BreakerOpts{Failures: 50}})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				film := plant.Film{WS2: float64(1 + (g+i)%3)}
				d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(film, 1000, uint64(g*10+i), plant.SpectrumFaults{}), Material: analysis.WS2, Hint: mr.HintBest})
				if err != nil || d.Answer.LayerCount != film.Truth().LayerCount {
					errs <- errors.New("lost or wrong: " + d.Model)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestUnknownDataClassIsT4: a class the router does not know is the most
// sensitive: local models answer, no remote one is sent the data.
func TestUnknownDataClassIsT4(t *testing.T) {
	srv := modeltest.New()
	defer srv.Close()
	r := newRouter(t, registry(remoteModel("remote-best", 3, mr.T3, srv.Base())), mr.Opts{})
	d, err := r.Analyze(context.Background(), mr.Request{Spectrum: spectrum(plant.Film{MoS2: 2}, 1000, 11, plant.SpectrumFaults{}),
		Material: analysis.MoS2, Hint: mr.HintBest, DataClass: "secret"})
	if err != nil || d.Model != "local-robust" || len(srv.Requests()) != 0 {
		t.Fatalf("%v %+v", err, d)
	}
}
