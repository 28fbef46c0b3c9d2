package modelrouter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"hcp-edge/session/analysis"
	"hcp-edge/session/analysis/robust"
)

// Event is something the router audits: a model refused the data for its
// class, an answer that fell back, a circuit that changed state.
type Event struct {
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"` // EventInvocation, EventRefused, EventFallback, EventCircuit
	Task     string    `json:"task,omitempty"`
	Model    string    `json:"model"`
	Instance string    `json:"instance,omitempty"`
	Detail   string    `json:"detail"`
	// Invocation is the tracker's record, for an EventInvocation.
	Invocation *Invocation `json:"invocation,omitempty"`
	// Withheld: the task's data is sealed at rest (DataClass.Sealed), so
	// the event carries no value read from it (no confidence, no model
	// answer or server text in an error; the fallback's detail generic).
	Withheld bool `json:"withheld,omitempty"`
}

// The kinds of Event.
const (
	// EventInvocation: one invocation of a model, or one the router did
	// not send (outcome refused), with the tracker's record: every model
	// the router considers for a task is audited under the task.
	EventInvocation = "model_invocation"
	EventRefused    = "model_refused"
	EventFallback   = "model_fallback"
	EventCircuit    = "model_circuit"
)

// Auditor receives the router's events; the agent's audit log implements
// it. Audit must not block for long: the router calls it inline.
type Auditor interface {
	Audit(Event)
}

// AuditFunc adapts a function to Auditor.
type AuditFunc func(Event)

// Audit calls f.
func (f AuditFunc) Audit(e Event) { f(e) }

// Opts configures a Router.
type Opts struct {
	// Policy is the default policy (Balance when empty).
	Policy Policy
	// ConfidenceThreshold is the default threshold (0.8 when zero).
	ConfidenceThreshold float64
	// TimeBudget is the longest an analysis may take (DefaultTimeBudget
	// when zero); a Request may only shorten it.
	TimeBudget time.Duration
	// TaskBudget is the default cost a task may spend (DefaultTaskBudget
	// when zero); DailyBudget what all tasks may spend in a UTC day
	// (DefaultDailyBudget when zero). Negative: nothing, so that only a
	// remote model that costs nothing may be asked.
	TaskBudget, DailyBudget float64
	// Retries of a transient failure on one instance (2 when zero; -1 none).
	Retries int
	// BackoffBase and BackoffMax bound the exponential backoff (200 ms, 5 s).
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter is the longest Retry-After the router waits for on the
	// same instance (10 s); longer, it moves on.
	MaxRetryAfter time.Duration
	Breaker       BreakerOpts
	// HTTPClient is the remote tier's client (NewHTTPClient when nil; an
	// *http.Client will do).
	HTTPClient Doer
	Auditor    Auditor
	// Tracker records every invocation (a new one when nil).
	Tracker *Tracker
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
	// Seed seeds the backoff's jitter (0: from the clock).
	Seed uint64
}

// The router's defaults (Opts).
const (
	DefaultTimeBudget  = 30 * time.Second
	DefaultTaskBudget  = 0.05
	DefaultDailyBudget = 5.0
)

func (o *Opts) defaults() {
	if o.Policy == "" {
		o.Policy = Balance
	}
	if o.ConfidenceThreshold <= 0 {
		o.ConfidenceThreshold = 0.8
	}
	if o.TimeBudget <= 0 {
		o.TimeBudget = DefaultTimeBudget
	}
	if o.TaskBudget == 0 {
		o.TaskBudget = DefaultTaskBudget
	}
	if o.DailyBudget == 0 {
		o.DailyBudget = DefaultDailyBudget
	}
	o.TaskBudget, o.DailyBudget = max(o.TaskBudget, 0), max(o.DailyBudget, 0)
	if o.Retries == 0 {
		o.Retries = 2
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 200 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 5 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 10 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = NewHTTPClient()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Tracker == nil {
		o.Tracker = NewTracker(o.Now)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
}

// Router routes each analysis across the registry's models. It is safe for
// concurrent use and keeps no goroutine: every invocation runs in the
// caller's Analyze.
type Router struct {
	reg     Registry
	o       Opts
	def     *Model   // the tier-1 default
	ladder  []*Model // the others: tier, then local first, then cost
	remotes map[string]*remote

	rmu sync.Mutex
	rnd *rand.Rand

	// The local models, replaceable by the package's own benchmarks.
	fit    func(x, y []float64, m analysis.Material) (analysis.Result, error)
	robust func(x, y []float64, m analysis.Material) (robust.Result, error)
	calls  atomic.Uint64
}

// New returns a router over reg, which must be valid.
func New(reg Registry, o Opts) (*Router, error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	if o.Policy != "" && !o.Policy.Valid() {
		return nil, fmt.Errorf("%w: %q", ErrBadPolicy, o.Policy)
	}
	o.defaults()
	r := &Router{reg: reg, o: o, remotes: map[string]*remote{}, rnd: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e37))}
	r.fit = func(x, y []float64, m analysis.Material) (analysis.Result, error) {
		return analysis.AnalyzeMaterial(x, y, m, analysis.DefaultOpts())
	}
	r.robust = func(x, y []float64, m analysis.Material) (robust.Result, error) {
		return robust.Analyze(x, y, m, robust.DefaultOpts())
	}
	for i := range r.reg.Models {
		m := &r.reg.Models[i]
		if m.Default {
			r.def = m
			continue
		}
		r.ladder = append(r.ladder, m)
		if m.Remote() {
			rm, err := newRemote(m, o.Breaker, r.circuitChanged)
			if err != nil {
				return nil, err
			}
			r.remotes[m.ID] = rm
		}
	}
	sort.SliceStable(r.ladder, func(i, j int) bool {
		a, b := r.ladder[i], r.ladder[j]
		if a.Tier != b.Tier {
			return a.Tier < b.Tier
		}
		if a.Remote() != b.Remote() {
			return !a.Remote()
		}
		return a.CostIn+a.CostOut < b.CostIn+b.CostOut
	})
	return r, nil
}

// Registry returns the router's registry.
func (r *Router) Registry() Registry { return r.reg }

// Tracker returns the router's tracker.
func (r *Router) Tracker() *Tracker { return r.o.Tracker }

// Circuits returns the state of every remote instance's circuit.
func (r *Router) Circuits() []CircuitState {
	var out []CircuitState
	for _, m := range r.ladder {
		if rm := r.remotes[m.ID]; rm != nil {
			for _, in := range rm.insts {
				out = append(out, CircuitState{Model: m.ID, Instance: in.url, State: in.cb.State().String()})
			}
		}
	}
	return out
}

func (r *Router) circuitChanged(model, inst string, from, to gobreaker.State) {
	r.o.Logger.Info("model circuit", "model", model, "instance", inst, "from", from.String(), "to", to.String())
	r.audit(Event{Kind: EventCircuit, Model: model, Instance: inst, Detail: from.String() + " → " + to.String()})
}

func (r *Router) audit(e Event) {
	if r.o.Auditor != nil {
		e.At = r.o.Now()
		r.o.Auditor.Audit(e)
	}
}

// routing is the state of one Analyze.
type routing struct {
	req       Request
	in        input
	start     time.Time
	deadline  time.Time
	thr       float64
	policy    Policy
	budget    float64 // task cost budget left
	dec       *Decision
	best      *Answer // the answer taken so far
	bestModel *Model
	bestInst  string
}

// Analyze routes one analysis (package doc, Routing). It always returns a
// Decision with an answer once the tier-1 fit has run; its error is not nil
// only when the spectrum is unusable (wrapping analysis.ErrNoData), the
// material unknown, or ctx ended before the tier-1 fit.
func (r *Router) Analyze(ctx context.Context, req Request) (Decision, error) {
	r.calls.Add(1)
	now := r.o.Now()
	g := routing{req: req, start: now, thr: req.ConfidenceThreshold, policy: req.Policy, dec: &Decision{}}
	if g.thr <= 0 {
		g.thr = r.o.ConfidenceThreshold
	}
	if g.policy == "" {
		g.policy = r.o.Policy
	}
	tb := r.o.TimeBudget // the router's bound; a request may only tighten it
	if req.TimeBudget > 0 && req.TimeBudget < tb {
		tb = req.TimeBudget
	}
	g.deadline = now.Add(tb)
	switch {
	case req.CostBudget < 0:
		g.budget = 0
	case req.CostBudget == 0:
		g.budget = r.o.TaskBudget
	default:
		g.budget = req.CostBudget
	}
	if req.DataClass == "" {
		g.req.DataClass = T1
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	g.in.req = &g.req
	g.in.x, g.in.y = ascending(req.Spectrum.Shift, req.Spectrum.Counts)

	// Tier 1, always.
	t0 := r.o.Now()
	t1, err := r.fit(g.in.x, g.in.y, req.Material)
	r.record(&g, r.def, "", t0, 0, 0, 0, outcomeOf(err), t1.Confidence, err)
	if err != nil {
		return Decision{}, fmt.Errorf("modelrouter: %w", err)
	}
	g.in.t1 = t1
	g.dec.Fit = t1
	a := fitAnswer(t1)
	g.take(&a, r.def, "")
	g.dec.Quality = readQuality(g.in.x, g.in.y, t1)

	escalate := a.Confidence < g.thr
	switch {
	case req.Hint == HintBest || g.policy == MaximizeQuality:
		escalate = true
	case req.Hint == HintFast || g.policy == MinimizeCost:
	default: // Balance
		escalate = escalate || g.dec.Quality.Poor()
	}
	if escalate {
		r.escalate(ctx, &g)
	}
	g.finish(r)
	return *g.dec, nil
}

// escalate walks the ladder (or, for best/maximize_quality, runs the local
// tiers then the remote models best first) until an answer reaches the
// threshold, recording every attempt.
func (r *Router) escalate(ctx context.Context, g *routing) {
	wantBest := g.req.Hint == HintBest || g.policy == MaximizeQuality
	var local, remote []*Model
	for _, m := range r.ladder {
		if m.Remote() {
			remote = append(remote, m)
		} else {
			local = append(local, m)
		}
	}
	if g.req.Hint == HintFast {
		remote = nil
	}
	if wantBest {
		slices.Reverse(remote) // best tier first, then fall back down
	}
	stopRemote := false
	failed := false
	for _, m := range append(local, remote...) {
		if ctx.Err() != nil {
			g.dec.Warnings = append(g.dec.Warnings, "canceled: "+ctx.Err().Error())
			return
		}
		if m.Remote() && stopRemote {
			break
		}
		if m.Remote() && !wantBest {
			if ok, why := g.remoteCanHelp(); !ok {
				g.dec.Reasons = append(g.dec.Reasons, "no remote model asked: "+why)
				break
			}
		}
		if !wantBest && g.best.Confidence >= g.thr && g.bestModel.Tier >= 2 {
			return
		}
		if wantBest && g.bestModel.Remote() {
			return
		}
		if !g.cleared(r, m) {
			continue
		}
		a, inst, err := r.invoke(ctx, g, m)
		if err != nil {
			failed = true
			var ie *InvokeError
			if errors.As(err, &ie) && ie.Outcome == InvalidRequest {
				g.dec.Warnings = append(g.dec.Warnings, fmt.Sprintf("%s refused the request (%v): no other remote model is asked", m.ID, err))
				stopRemote = true
			} else if outcomeOf(err) != Refused {
				g.dec.Warnings = append(g.dec.Warnings, fmt.Sprintf("%s failed: %v", m.ID, err))
			}
			continue
		}
		if failed {
			g.dec.Fallback = true
		}
		// A higher tier's answer replaces a lower one's; the same tier's only
		// when more confident.
		if m.Tier > g.bestModel.Tier || a.Confidence > g.best.Confidence {
			g.take(&a, m, inst)
		}
	}
	if failed && !g.bestModel.Remote() && len(remote) > 0 {
		g.dec.Fallback = true
	}
}

// NoiseLimitedSNR is the signal-to-noise ratio below which the router
// judges an answer limited by noise: no model sees through it, so it
// advises a longer integration instead of asking a remote model (unless
// the request wants the best).
const NoiseLimitedSNR = 15

// remoteCanHelp reports whether a remote model, which sees what tier 2
// saw, could lift the answer: always when no local model found the bands;
// otherwise not when noise limits it (re-acquire), nor
// when tier 2 measured a mixture precisely (the doubt is the sample's: an
// even mixture has no dominant layer count for any model to find).
func (g *routing) remoteCanHelp() (bool, string) {
	if g.best.LayerCount == 0 {
		return true, "" // no local model found the bands: any answer is worth its cost
	}
	// (SNR 0: tier 1 found no band to measure it by; the remote may.)
	if q := g.dec.Quality; q.SNR > 0 && q.SNR < NoiseLimitedSNR {
		return false, fmt.Sprintf("noise limits the answer (SNR %.0f < %d): re-acquire", q.SNR, NoiseLimitedSNR)
	}
	if t2 := g.in.t2; t2 != nil && t2.Found && len(t2.Coverage) > 1 && t2.Peaks.RSquared > 0.98 {
		worst := 0.0
		for _, c := range t2.Coverage {
			worst = math.Max(worst, c.Err)
		}
		if worst < 0.05 {
			return false, fmt.Sprintf("tier 2 measured a mixture precisely (coverage ±%.3f): the doubt is the sample's", worst)
		}
	}
	return true, ""
}

// take makes a the decision's answer.
func (g *routing) take(a *Answer, m *Model, inst string) {
	g.best, g.bestModel, g.bestInst = a, m, inst
}

// cleared checks the data class, time and cost budgets of m, recording and
// auditing a refusal.
func (g *routing) cleared(r *Router, m *Model) bool {
	refuse := func(err error, audit bool) bool {
		r.refused(g, m, err)
		if audit {
			r.audit(Event{Kind: EventRefused, Task: g.req.Task, Model: m.ID, Detail: err.Error()})
		}
		return false
	}
	class := g.req.DataClass
	if class.Rank() == 0 {
		class = T4 // an unknown class is treated as the most sensitive
	}
	if class.Rank() > m.Cleared.Rank() {
		return refuse(fmt.Errorf("%w: %s data (as %s), %s cleared for %s", ErrNotCleared, g.req.DataClass, class, m.ID, m.Cleared), true)
	}
	if left := g.deadline.Sub(r.o.Now()); m.Latency > left {
		return refuse(fmt.Errorf("%w: %s typically takes %v, %v left", ErrOverBudget, m.ID, m.Latency, left.Round(time.Millisecond)), false)
	}
	if m.Remote() {
		est := g.estimate(m)
		if est > g.budget {
			return refuse(fmt.Errorf("%w: %s would cost about %.5f, the task has %.5f left", ErrOverBudget, m.ID, est, g.budget), false)
		}
		if spent := r.o.Tracker.SpentToday(); spent+est > r.o.DailyBudget {
			return refuse(fmt.Errorf("%w: %s would cost about %.5f, the day has %.5f left", ErrOverBudget, m.ID, est, r.o.DailyBudget-spent), false)
		}
	}
	return true
}

// estimate is the cost of one call of m at most: the description's tokens
// in, the answer's cap out.
func (g *routing) estimate(m *Model) float64 {
	_, in := describe(&g.in, m.ContextWindow)
	return float64(in)*m.CostIn/1000 + float64(maxAnswerTokens)*m.CostOut/1000
}

// invoke runs model m once (with retries and instances for a remote one).
func (r *Router) invoke(ctx context.Context, g *routing, m *Model) (Answer, string, error) {
	if !m.Remote() {
		t0 := r.o.Now()
		switch m.Name {
		case LocalRobust:
			res, err := r.robust(g.in.x, g.in.y, g.req.Material)
			if err == nil {
				g.in.t2 = &res
			}
			r.record(g, m, "", t0, 0, 0, 0, outcomeOf(err), res.Confidence, err)
			return robustAnswer(res), "", err
		default:
			res, err := r.fit(g.in.x, g.in.y, g.req.Material)
			r.record(g, m, "", t0, 0, 0, 0, outcomeOf(err), res.Confidence, err)
			return fitAnswer(res), "", err
		}
	}
	rm := r.remotes[m.ID]
	if rm.lim != nil && !rm.lim.Allow() {
		err := fmt.Errorf("%w: %s is at its %d requests per minute", ErrRateLimited, m.ID, m.RPM)
		r.refused(g, m, err)
		return Answer{}, "", err
	}
	prompt, estIn := describe(&g.in, m.ContextWindow)
	start := int(atomic.AddUint32(&rm.next, 1))
	var last error = fmt.Errorf("%w: every instance of %s", ErrCircuitOpen, m.ID)
	for k := range rm.insts {
		in := rm.insts[(start+k)%len(rm.insts)]
		for attempt := 0; attempt <= r.o.Retries; attempt++ {
			left := g.deadline.Sub(r.o.Now())
			if left <= 0 {
				return Answer{}, "", fmt.Errorf("%w: time budget spent (%v)", ErrOverBudget, last)
			}
			timeout := min(3*max(m.Latency, 100*time.Millisecond), left)
			actx, cancel := context.WithTimeoutCause(ctx, timeout, errAttemptTimeout)
			t0 := r.o.Now()
			var a Answer
			var tin, tout int
			_, err := in.cb.Execute(func() (struct{}, error) {
				var err error
				a, tin, tout, err = complete(actx, r.o.HTTPClient, m, rm.key, in.url, prompt, estIn)
				return struct{}{}, err
			})
			cancel()
			if isOpen(err) {
				last = fmt.Errorf("%w: %s at %s", ErrCircuitOpen, m.ID, in.url)
				break // next instance
			}
			cost := float64(tin)*m.CostIn/1000 + float64(tout)*m.CostOut/1000
			g.budget -= cost
			g.dec.Cost += cost
			r.record(g, m, in.url, t0, tin, tout, cost, outcomeOf(err), a.Confidence, err)
			if err == nil {
				return a, in.url, nil
			}
			last = err
			var ie *InvokeError
			if !errors.As(err, &ie) || !ie.Transient() {
				return Answer{}, "", err // bad answer, invalid request, canceled
			}
			if attempt == r.o.Retries {
				break
			}
			r.rmu.Lock()
			wait := backoff(attempt, ie.RetryAfter, r.o.BackoffBase, r.o.BackoffMax, r.rnd.Float64)
			r.rmu.Unlock()
			if wait > r.o.MaxRetryAfter || r.o.Now().Add(wait).After(g.deadline) {
				break // not worth waiting here: next instance
			}
			if err := sleepCtx(ctx, wait); err != nil {
				return Answer{}, "", &InvokeError{Model: m.ID, Instance: in.url, Outcome: Canceled, Err: err}
			}
		}
	}
	if errors.Is(last, ErrCircuitOpen) {
		r.refused(g, m, last)
	}
	return Answer{}, "", last
}

// refused records a model the router did not send the data to.
func (r *Router) refused(g *routing, m *Model, err error) {
	g.dec.Attempts = append(g.dec.Attempts, Attempt{Model: m.ID, Tier: m.Tier, Outcome: Refused, Error: err.Error()})
	r.track(Invocation{At: r.o.Now(), Task: g.req.Task, Model: m.ID, Tier: m.Tier, Outcome: Refused, Error: err.Error(), Class: g.req.DataClass})
}

// track records inv in the tracker and audits it (EventInvocation); for
// sealed data without the confidence and, but for a refusal's, the error.
func (r *Router) track(inv Invocation) {
	r.o.Tracker.Record(inv)
	e := Event{Kind: EventInvocation, Task: inv.Task, Model: inv.Model, Instance: inv.Instance,
		Detail: fmt.Sprintf("tier %d %s", inv.Tier, inv.Outcome), Invocation: &inv}
	if inv.Class.Sealed() {
		inv.Confidence, e.Withheld = 0, true
		if inv.Outcome != Refused {
			inv.Error = ""
		}
	}
	r.audit(e)
}

// record adds one attempt to the decision and the tracker.
func (r *Router) record(g *routing, m *Model, inst string, t0 time.Time, tin, tout int, cost float64, o Outcome, conf float64, err error) {
	lat := r.o.Now().Sub(t0)
	at := Attempt{Model: m.ID, Instance: inst, Tier: m.Tier, Outcome: o, Latency: lat, TokensIn: tin, TokensOut: tout, Cost: cost}
	if err == nil {
		at.Confidence = conf
	} else {
		at.Error = err.Error()
	}
	g.dec.Attempts = append(g.dec.Attempts, at)
}

// finish fills the decision from the answer taken, records every attempt
// in the tracker (marking the one taken) and audits a fallback.
func (g *routing) finish(r *Router) {
	d := g.dec
	d.Answer, d.Model, d.Tier, d.Instance = *g.best, g.bestModel.ID, g.bestModel.Tier, g.bestInst
	d.Elapsed = r.o.Now().Sub(g.start)
	taken := -1
	for i := len(d.Attempts) - 1; i >= 0; i-- {
		if at := d.Attempts[i]; at.Model == d.Model && at.Outcome == OK && at.Instance == d.Instance {
			taken = i
			break
		}
	}
	for i, at := range d.Attempts {
		if at.Outcome == Refused {
			continue // recorded when refused
		}
		r.track(Invocation{At: g.start, Task: g.req.Task, Model: at.Model, Instance: at.Instance, Tier: at.Tier,
			Latency: at.Latency, TokensIn: at.TokensIn, TokensOut: at.TokensOut, Cost: at.Cost, Outcome: at.Outcome,
			Confidence: at.Confidence, Accepted: i == taken, Error: at.Error, Class: g.req.DataClass})
	}
	if d.Fallback {
		d.Warnings = append(d.Warnings, fmt.Sprintf("fell back: the answer is %s's (tier %d) with confidence %.2f", d.Model, d.Tier, d.Answer.Confidence))
		e := Event{Kind: EventFallback, Task: g.req.Task, Model: d.Model, Instance: d.Instance, Detail: d.Warnings[len(d.Warnings)-1]}
		if g.req.DataClass.Sealed() {
			e.Detail, e.Withheld = fmt.Sprintf("fell back: the answer is %s's (tier %d)", d.Model, d.Tier), true
		}
		r.audit(e)
	}
	// Saturated and unsure: advise a shorter integration; noise-limited and
	// unsure: a longer one.
	q := d.Quality
	if it := g.req.Spectrum.Integration; d.Answer.Confidence < g.thr && it > 0 && q.Saturated*20 > len(g.in.y) {
		d.Reacquire = &Reacquire{Integration: max(it/4, time.Millisecond), Reason: fmt.Sprintf("confidence %.2f below %.2f with %d saturated points: the detector clips", d.Answer.Confidence, g.thr, q.Saturated)}
	} else if d.Answer.Confidence < g.thr && q.SNR < 30 && g.req.Spectrum.Integration > 0 {
		f := 4.0
		if q.SNR > 0 {
			f = math.Min(4, math.Max(1.5, (30/q.SNR)*(30/q.SNR)))
		}
		it := time.Duration(float64(g.req.Spectrum.Integration) * f).Round(time.Millisecond)
		it = min(it, 60*time.Second)
		if it > g.req.Spectrum.Integration {
			d.Reacquire = &Reacquire{Integration: it, Reason: fmt.Sprintf("confidence %.2f below %.2f with SNR %.0f: noise limits the answer", d.Answer.Confidence, g.thr, q.SNR)}
		}
	}
}

// ascending returns the finite points sorted by shift; the spectrum's own
// slices when they already are (the device contract), without a copy.
func ascending(shift, counts []float64) ([]float64, []float64) {
	n := min(len(shift), len(counts))
	ok := len(shift) == len(counts)
	for i := 0; ok && i < n; i++ {
		if math.IsNaN(shift[i]) || math.IsInf(shift[i], 0) || math.IsNaN(counts[i]) || math.IsInf(counts[i], 0) || (i > 0 && shift[i] <= shift[i-1]) {
			ok = false
		}
	}
	if ok {
		return shift, counts
	}
	type pt struct{ x, y float64 }
	pts := make([]pt, 0, n)
	for i := 0; i < n; i++ {
		if !math.IsNaN(shift[i]) && !math.IsInf(shift[i], 0) && !math.IsNaN(counts[i]) && !math.IsInf(counts[i], 0) {
			pts = append(pts, pt{shift[i], counts[i]})
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	x, y := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		x[i], y[i] = p.x, p.y
	}
	return x, y
}

// Health is one remote instance's answer to a health check.
type Health struct {
	Model    string        `json:"model"`
	Instance string        `json:"instance"`
	OK       bool          `json:"ok"`
	Latency  time.Duration `json:"latency_ns"`
	Error    string        `json:"error,omitempty"`
	Circuit  string        `json:"circuit"`
}

// CheckHealth asks every remote instance GET {instance}/models, through
// its circuit breaker (a failing instance opens its circuit; an open one is
// not asked, a half-open one is probed), and returns what each said. The
// caller decides when to call it.
func (r *Router) CheckHealth(ctx context.Context) []Health {
	var out []Health
	for _, m := range r.ladder {
		rm := r.remotes[m.ID]
		if rm == nil {
			continue
		}
		for _, in := range rm.insts {
			t0 := r.o.Now()
			_, err := in.cb.Execute(func() (struct{}, error) {
				cctx, cancel := context.WithTimeout(ctx, min(3*max(m.Latency, 100*time.Millisecond), 10*time.Second))
				defer cancel()
				req, err := http.NewRequestWithContext(cctx, http.MethodGet, in.url+"/models", nil)
				if err != nil {
					return struct{}{}, &InvokeError{Model: m.ID, Instance: in.url, Outcome: InvalidRequest, Err: err}
				}
				if rm.key != "" {
					req.Header.Set("Authorization", "Bearer "+rm.key)
				}
				resp, err := r.o.HTTPClient.Do(req)
				if err != nil {
					return struct{}{}, &InvokeError{Model: m.ID, Instance: in.url, Outcome: Unreachable, Err: err}
				}
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					return struct{}{}, &InvokeError{Model: m.ID, Instance: in.url, Outcome: ServerError, Status: resp.StatusCode}
				}
				return struct{}{}, nil
			})
			h := Health{Model: m.ID, Instance: in.url, OK: err == nil, Latency: r.o.Now().Sub(t0), Circuit: in.cb.State().String()}
			if err != nil {
				h.Error = err.Error()
			}
			out = append(out, h)
		}
	}
	return out
}
