package preview

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/analysis"
	"hcp-edge/session/budget"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
)

// Defaults of Opts.
const (
	// DefaultChunk is the virtual time between two observations of the
	// simulated rig (trip evaluation, margins, gas and heater accounting)
	// and the longest single step of the plant: the trip monitor's
	// watchdog kick period.
	DefaultChunk = time.Second
	// DefaultWallLimit bounds a preview's wall time.
	DefaultWallLimit = 60 * time.Second
	// DefaultWatchdog is the furnace comms watchdog's timeout when the
	// configuration has none (rigconfig's default).
	DefaultWatchdog = 5 * time.Second
	// Operator is who arms the simulated rig.
	Operator = "preview"
	// Token is the preview's own session token: its Authorizer grants
	// every action of it (the envelope still judges each one).
	Token = "preview"
)

// Opts configures a preview.
type Opts struct {
	// Config is the agent's configuration: its envelope and the names and
	// ranges of its instruments. Nothing of Config.Rig is opened.
	Config rigconfig.File
	// Envelope is Config's compiled envelope; nil: compiled here.
	Envelope *envelope.Envelope
	// ArtifactDir receives the run's artifacts (process_profile.svg and
	// the rest); "": a temporary directory, removed when Run returns.
	ArtifactDir string
	// Seed seeds the plant's sensor noise and the spectra (0: 1).
	Seed uint64
	// Precursor is what the simulated boat holds; "": the precursor of
	// the material the recipe grows (its analyse phase's material), the
	// simulator's default (MoO3) for a recipe that names none
	// (boatFor). The prediction says which it assumed, and why.
	Precursor plant.Precursor
	// Chunk is the observation period in virtual time (0: DefaultChunk).
	Chunk time.Duration
	// WallLimit bounds the wall time of the run (0: DefaultWallLimit).
	WallLimit time.Duration
	// Logger receives the executor's log (nil: discarded).
	Logger *slog.Logger
	// Capability, when set, checks the task's inputs against its input
	// schema first, as the gate checks a task_submit's.
	Capability *capability.Capability
	// Answers answer the recipe's questions, by question name, as an
	// operator would type them (yes, 2.5, MoO3): a question without one
	// stops the simulated run there (ErrNoAnswer).
	Answers map[string]string
}

// ErrInput marks a task the executor refuses to plan (executor.ErrInput).
var ErrInput = executor.ErrInput

// ErrUnsimulated marks a recipe whose material the simulated plant cannot
// grow: the preview refuses to predict it (it would predict another
// material). Its errors also wrap ErrInput: a preview_request of it is
// answered request_refused invalid_input, `recipe simulate` exits 2.
var ErrUnsimulated = errors.New("the simulator cannot grow the recipe's material")

// Run previews task on a simulated rig: it plans the task with x, runs the
// recipe through the real interlock and tool pipeline against simulated
// instruments over firmware-sim's plant in virtual time, and returns the
// prediction. A task x refuses to plan is an error wrapping ErrInput; a
// run that fails is a Prediction with Failure set, not an error.
func Run(ctx context.Context, x executor.Executor, task executor.Task, o Opts) (*Prediction, error) {
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	if o.WallLimit <= 0 {
		o.WallLimit = DefaultWallLimit
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	env := o.Envelope
	if env == nil {
		spec, err := rigconfig.Spec(o.Config.Rig)
		if err != nil {
			return nil, err
		}
		if env, err = envelope.Compile(o.Config.Envelope, spec); err != nil {
			return nil, fmt.Errorf("preview: envelope: %w", err)
		}
	}
	if o.Capability != nil {
		if err := o.Capability.ValidateInput(task.Inputs); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInput, err)
		}
	}
	rec, err := x.Plan(task)
	if err != nil {
		return nil, err
	}
	if err := checkZones(o.Config.Rig.Layout(), rec); err != nil {
		return nil, err
	}
	expected := ""
	if g, ok := rec.(interface{ ExpectedMaterial() string }); ok {
		expected = g.ExpectedMaterial()
	}
	rig, err := simulatedRig(o.Config.Rig)
	if err != nil {
		return nil, err
	}
	boat, err := boatFor(x.Capability(), expected, o.Precursor, rig)
	if err != nil {
		return nil, err
	}
	o.Precursor = boat.Precursor
	wallStart := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.WallLimit)
	defer cancel()

	r, err := newRun(ctx, env, o, rig)
	if err != nil {
		return nil, err
	}
	dir := o.ArtifactDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hcp-preview-"); err != nil {
			return nil, fmt.Errorf("preview: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	wrapped := newTimedRecipe(rec, r)
	xenv := &executor.Env{Rig: executor.ToolRig(r.iv, nil), Token: Token, Clock: r.clock, Sink: r, Checkpoints: discard{},
		ArtifactDir: dir, SessionID: nameOr(task.SessionID, "preview"), Logger: o.Logger, Questions: answers(o.Answers)}
	res, runErr := executor.Execute(ctx, wrapped, xenv, 0)
	r.observe(ctx) // the state at the end
	p := r.prediction(x.Capability(), rec.Steps(), res, runErr)
	p.Product.ExpectedMaterial, p.Product.Precursor, p.Product.PrecursorBasis = boat.Expected, string(boat.Precursor), boat.Basis
	p.WallTime = Duration(time.Since(wallStart))
	if p.WallTime > 0 {
		p.SpeedUp = float64(p.ProcessTime) / float64(p.WallTime)
	}
	if ctx.Err() != nil && errors.Is(runErr, context.DeadlineExceeded) {
		p.Failure.Message = fmt.Sprintf("the preview's wall-time cap (%v) ran out at %v of process time", o.WallLimit, time.Duration(p.ProcessTime).Round(time.Second))
	}
	if o.ArtifactDir == "" {
		p.Artifacts = nil // removed with the temporary directory
	}
	return p, nil
}

// run is one preview's simulated world and what it observed.
type run struct {
	clock   *Clock
	plant   *plant.Plant
	furnace *simFurnace
	env     *envelope.Envelope
	il      *envelope.Interlock
	iv      *envelope.Invoker
	audit   *memAudit
	tracker *budget.Tracker
	ctx     context.Context

	mu      sync.Mutex // guards what the observations and the sink record
	step    int        // the running step, -1 before the first
	names   []string   // the recipe's step names
	spans   []span
	margins map[string]*Margin
	zones   []Zone // each heated zone's course, in the rig's order
	zoneAt  time.Duration
	trips   []Trip
	warns   []string
}

type span struct {
	start, end time.Duration
	ran        bool
}

func newRun(ctx context.Context, env *envelope.Envelope, o Opts, rig plant.Rig) (*run, error) {
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // virtual: any fixed instant
	c := NewClock(origin, o.Chunk)
	po := plant.DefaultOpts()
	po.Now, po.Seed, po.Precursor, po.Rig = c.Now, o.Seed, o.Precursor, rig
	zones := o.Config.Rig.ZoneEntries()
	if len(zones) > 1 { // each zone a 3200 (simZone); one: the simulator's furnace (simFurnace)
		po.FurnaceModel = plant.FurnaceEurotherm3200
	}
	if po.Precursor == "" { // a rig that grows with no boat: the plant's default, unused
		po.Precursor = plant.DefaultOpts().Precursor
	}
	p, err := plant.New(po) // never Started: only Sleep steps it
	if err != nil {
		return nil, fmt.Errorf("preview: plant: %w", err)
	}
	er, furnace, err := simRig(o.Config.Rig, p, c, o.Seed)
	if err != nil {
		return nil, err
	}
	// The observations outlive the wall-time cap: the recipe's cleanup after
	// it still runs (in virtual time) and is observed.
	r := &run{clock: c, plant: p, furnace: furnace, env: env, audit: &memAudit{clock: c}, ctx: context.WithoutCancel(ctx), step: -1,
		margins: map[string]*Margin{}}
	r.zones = make([]Zone, len(zones))
	for i := range zones { // the envelope's zones, in its order
		r.zones[i].Name = zones[i].Name
	}
	r.tracker = budget.NewTracker(budget.Limits{}, budget.State{}, budget.Opts{Scale: 1, MaxGap: 2 * o.Chunk, Start: origin})
	iopts := envelope.DefaultInterlockOpts()
	iopts.Clock = c.Now
	if r.il, err = envelope.NewInterlock(env, er, grantAll{}, r.audit, iopts); err != nil {
		return nil, fmt.Errorf("preview: interlock: %w", err)
	}
	tools, err := catalog.Generate(o.Config.Rig.Layout(), analysis.MaterialNames()...)
	if err != nil {
		return nil, fmt.Errorf("preview: tool catalog: %w", err)
	}
	if r.iv, err = envelope.NewInvoker(r.il, tools, envelope.InvokerOpts{Clock: c.Now, RateClock: c.Now}); err != nil {
		return nil, fmt.Errorf("preview: %w", err)
	}
	// The preview's analysis is the tier-1 fit alone: it asks no model
	// (and spends nothing) for a simulated film.
	if err := executor.RegisterAnalysis(r.iv, nil); err != nil {
		return nil, fmt.Errorf("preview: %w", err)
	}
	wd := o.Config.Monitor.WatchdogTimeout
	if wd <= 0 {
		wd = DefaultWatchdog
	}
	if furnace != nil { // nil: the zones' controllers have no comms watchdog
		if err := furnace.configureWatchdog(wd); err != nil {
			return nil, fmt.Errorf("preview: %w", err)
		}
	}
	c.advance = r.advance
	// The operator arms the rig (every instrument reads at once: no wait).
	if err := r.il.Arm(ctx, Operator); err != nil {
		return nil, fmt.Errorf("preview: arming the simulated rig: %w", err)
	}
	c.restart() // process time counts from the run's start
	return r, nil
}

// advance steps the world by d of virtual time: the plant's physics, the
// furnace watchdog's kick (the monitor's job on the rig), then, unless
// quiet, an observation.
func (r *run) advance(d time.Duration, quiet bool) {
	r.plant.Step(d)
	if r.furnace != nil {
		_ = r.furnace.KickWatchdog(r.ctx)
	}
	if !quiet {
		r.observe(r.ctx)
	}
}

// observe reads the simulated rig as the trip monitor would: it runs the
// trip rules (a trip runs its emergency procedure through the interlock,
// as on the rig), and records the margins and the gas and heater usage.
func (r *run) observe(ctx context.Context) {
	rd := r.il.View().Readings(ctx)
	r.tracker.Observe(rd)
	at := r.clock.Elapsed()
	if latched, _ := r.il.Latched(); !latched {
		if evs := r.env.EvaluateTrips(rd); len(evs) > 0 { // the first: the trip latches the interlock
			ev := evs[0]
			r.mu.Lock()
			r.trips = append(r.trips, Trip{At: Duration(at), Step: r.stepNameLocked(), Trip: string(ev.Trip),
				Procedure: string(ev.Procedure), Reason: ev.Reason})
			r.mu.Unlock()
			_ = r.il.Trip(ctx, ev)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.zonesLocked(rd, at)
	params := r.env.Config().Parameters
	for _, m := range r.env.Margins(rd) {
		if !m.Applies {
			continue
		}
		// The upper limit always; the lower one where the envelope sets a
		// floor above zero (a flow or a setpoint at 0 is off, not at a limit).
		r.lowLocked(m, "max", m.Max-m.Value, at)
		if q, ok := params[m.Channel]; ok && q.Min != nil && *q.Min > 0 {
			r.lowLocked(m, "min", m.Value-m.Min, at)
		}
	}
}

// lowLocked keeps the smallest headroom h of m to its limit ("max" or
// "min").
func (r *run) lowLocked(m envelope.Margin, limit string, h float64, at time.Duration) {
	k := m.Channel + " " + limit
	if low, ok := r.margins[k]; ok && h >= low.Headroom {
		return
	}
	bound := m.Max
	if limit == "min" {
		bound = m.Min
	}
	r.margins[k] = &Margin{Channel: m.Channel, Limit: limit, Bound: bound, Unit: m.Unit, Value: m.Value,
		Headroom: h, At: Duration(at), Step: r.stepNameLocked()}
}

// stepNameLocked names the running step ("" before the first).
func (r *run) stepNameLocked() string {
	if r.step < 0 || r.step >= len(r.names) {
		return ""
	}
	return r.names[r.step]
}

// boat is what the preview loads in the simulated boat, and why.
type boat struct {
	Expected  string // the recipe's material ("" none, "auto")
	Precursor plant.Precursor
	Basis     string
}

// simulatedRig is the simulated rig whose gas lines are the
// configuration's (plant.RigFor): the layout chooses the plant. A layout
// no simulated rig has is an error wrapping ErrUnsimulated and ErrInput.
func simulatedRig(r rigconfig.Rig) (plant.Rig, error) {
	gases := make([]string, 0, len(r.MFCs))
	for _, m := range r.MFCs {
		gases = append(gases, m.Gas)
	}
	rig, err := plant.RigFor(gases)
	if err != nil {
		return "", fmt.Errorf("%w: %w: %w", ErrInput, ErrUnsimulated, err)
	}
	return rig, nil
}

// boatFor chooses the precursor of a preview of capab, whose recipe grows
// expected, on the simulated rig: given (the caller's choice) is taken as
// it is; otherwise the precursor the plant grows expected from, none for a
// material the rig grows with no boat (from a gas on its foil); a recipe
// that names no material (none analysed, or "auto") gets the simulator's
// default. A material the rig grows from no precursor is an error
// wrapping ErrUnsimulated and ErrInput.
func boatFor(capab, expected string, given plant.Precursor, rig plant.Rig) (boat, error) {
	b := boat{Expected: expected}
	if m, err := analysis.ParseMaterial(expected); err == nil && expected != "" {
		b.Expected = string(m)
	}
	switch {
	case given != "":
		b.Precursor, b.Basis = given, "given to the preview"
		return b, nil
	case b.Expected == "":
		b.Precursor, b.Basis = plant.Precursors[0], "the recipe names no material: the simulator's default boat"
		return b, nil
	case b.Expected == string(analysis.Auto):
		b.Precursor, b.Basis = plant.Precursors[0], "the recipe names no material (auto): the simulator's default boat"
		return b, nil
	}
	if pr, ok := rig.Grows(b.Expected); ok {
		b.Precursor = pr
		b.Basis = fmt.Sprintf("the recipe grows %s, which the simulator grows from %s", b.Expected, pr)
		if pr == "" {
			b.Basis = fmt.Sprintf("the recipe grows %s, which the simulated %s rig grows with no boat (%s)", b.Expected, rig, strings.Join(rig.Grown(), "; "))
		}
		return b, nil
	}
	return b, fmt.Errorf("%w: %w: %s grows %s, and the simulated plant grows only %s: no prediction of another material",
		ErrInput, ErrUnsimulated, capab, expected, strings.Join(rig.Grown(), " and "))
}
