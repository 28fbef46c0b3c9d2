package envelope

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope/internal/rawkey"
)

// Rig is the set of writable instruments cmd/ builds from configuration. It is
// handed to NewInterlock alone; everyone else gets a View.
type Rig struct {
	// Furnace is the controller of the first heated zone (RigSpec.ZoneList):
	// the zone named furnace on a rig of one.
	Furnace device.TemperatureController
	// Zones are the controllers of the other heated zones, by zone name
	// (nil on a rig of one zone).
	Zones        map[string]device.TemperatureController
	Flows        map[string]device.FlowController // by gas
	Gauge        device.PressureGauge
	Switches     map[string]device.Switch       // by name: valves, pump, scrubber, relay
	Inputs       map[string]device.DigitalInput // by name: door, exhaust, e-stop, leak
	Spectrometer device.Spectrometer            // may be nil when the spec has none
}

// Grant is what an Authorizer vouches for: the session the token belongs to.
type Grant struct {
	SessionID string
}

// Authorizer checks session tokens for the interlock. session/ implements it.
//
// The interlock, not the caller of apply, decides which of the two applies:
// an action toward the safe state (Envelope.IsSafe: heater off, a flow to
// zero, a switch to the safe level the rig spec declares for it) needs an
// authentic token but no scope, because scope limits what a session may
// open, not what it may close; every other action needs the scope.
type Authorizer interface {
	// Authorize checks that token is valid, unexpired, and that its scope
	// covers a.
	Authorize(ctx context.Context, token string, a Action) (Grant, error)
	// Authenticate checks that token is valid and unexpired, whatever its
	// scope: the check of an action toward the safe state.
	Authenticate(ctx context.Context, token string) (Grant, error)
}

// Auditor records decisions durably. A write is not executed unless its
// acceptance was recorded.
type Auditor interface {
	Record(ctx context.Context, e Entry) error
}

// Decision is what an audit Entry records.
type Decision string

// Decisions.
const (
	DecisionRefused  Decision = "refused"  // not authorised, or outside the envelope: nothing was sent
	DecisionAccepted Decision = "accepted" // about to be written
	DecisionExecuted Decision = "executed" // written and read back
	DecisionFailed   Decision = "failed"   // the instrument failed or the read-back did not match
	DecisionHalted   Decision = "halted"   // safe state (e-stop) ran
	DecisionTripped  Decision = "tripped"  // an emergency procedure ran
	DecisionReset    Decision = "reset"    // an operator cleared the latch
	DecisionArmed    Decision = "armed"    // an operator energised the interlock-owned outputs
)

// Entry is one audit record.
type Entry struct {
	At        time.Time `json:"at"`
	SessionID string    `json:"session_id,omitempty"`
	Operator  string    `json:"operator,omitempty"`
	Action    *Action   `json:"action,omitempty"`
	Decision  Decision  `json:"decision"`
	Rule      Rule      `json:"rule,omitempty"`
	Trip      Trip      `json:"trip,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	// TowardSafe marks an action the interlock judged toward the safe state
	// (Envelope.IsSafe): it was authenticated, not held to the token's scope.
	TowardSafe bool `json:"toward_safe,omitempty"`
	// Envelope is the version of the envelope that decided (Envelope.Version).
	Envelope string `json:"envelope,omitempty"`
	// Readings are what the decision was based on: for a trip (and a reset
	// refused while its condition holds), the reading that crossed its
	// limit; for a refusal by the envelope's check, the
	// value the rule compared with its limit (under the refused action's
	// channel: vent_valve refused at 300 celsius) and then the snapshot it
	// was judged on. Empty for the other decisions.
	Readings []Reading `json:"readings,omitempty"`
}

// Reading is one channel's value a decision was based on: in the units of
// the envelope's configuration when Limit is set (a violation's or a
// trip's), in device units otherwise (kelvin, pascal, sccm; 1 or 0 for a
// switch or an input).
type Reading struct {
	Channel string    `json:"channel"`
	Value   float64   `json:"value"`
	Limit   *float64  `json:"limit,omitempty"`
	Unit    string    `json:"unit,omitempty"`
	At      time.Time `json:"at,omitzero"` // when it was read (the snapshot's instant for a trip)
}

// Interlock owns the writable rig. Its apply, reached only through an
// Invoker (the tool pipeline), is the only way for a session
// to move an actuator: authorise, check against the envelope and current
// readings, write with a timeout, read back, audit. SafeState, Trip, Reset
// and Arm are the local paths that bypass authorisation.
//
// apply calls are serialised. SafeState does not wait for them: it latches,
// cancels the apply in flight, halts everything, and halts again once that
// apply has returned, so a write that raced the halt cannot survive it.
type Interlock struct {
	env   *Envelope
	rig   Rig
	auth  Authorizer
	audit Auditor
	opts  InterlockOpts
	log   *slog.Logger
	instr []namedInstrument

	applyMu sync.Mutex // serialises apply

	mu          sync.Mutex // guards the fields below
	state       *State
	latched     bool
	latchReason string
	inflight    context.CancelFunc
	done        chan struct{}
	// observe, when set (by the monitor), gets every fresh snapshot the
	// interlock takes for its own decisions (Reset, Arm, the view): the
	// monitor's cache is then never older than what a decision saw.
	observe func(Readings)
	// polls are the monitor's poll periods (set by NewMonitor), the base
	// of the bound of a wait for a fresh reading (freshwait.go).
	polls pollPeriods
}

type instrumentRole int

const (
	roleFurnace instrumentRole = iota + 1
	roleFlow
	roleGasValve
	roleRelay
	roleSwitch
	roleGauge
	roleSpectrometer
)

type namedInstrument struct {
	name string
	role instrumentRole
	inst device.Instrument
}

// zoneInstrument is the name of the i-th heated zone's controller among
// the interlock's instruments (halt errors, the monitor's pollers and
// health): furnace for the first zone of a rig whose zones are that one,
// else the zone's name.
//
//go:noinline
func (il *Interlock) zoneInstrument(i int) string {
	if i == 0 && len(il.env.zones) == 1 && il.env.zones[0].name == "furnace" {
		return "furnace"
	}
	return "zone " + il.env.zones[i].name
}

// controller is the i-th heated zone's controller.
//
//go:noinline
func (il *Interlock) controller(i int) device.TemperatureController {
	if i == 0 {
		return il.rig.Furnace
	}
	return il.rig.Zones[il.env.zones[i].name]
}

// NewInterlock checks rig against env's RigSpec (every declared instrument
// present, full scales and safe states as declared) and returns the
// interlock, unlatched.
func NewInterlock(env *Envelope, rig Rig, auth Authorizer, audit Auditor, opts InterlockOpts) (*Interlock, error) {
	if env == nil || auth == nil || audit == nil {
		return nil, errors.New("envelope: NewInterlock needs an envelope, an authorizer and an auditor")
	}
	def := DefaultInterlockOpts()
	if opts.Clock == nil {
		opts.Clock = def.Clock
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = def.ReadTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = def.WriteTimeout
	}
	if opts.HaltTimeout <= 0 {
		opts.HaltTimeout = def.HaltTimeout
	}
	if opts.SetpointTolerance <= 0 {
		opts.SetpointTolerance = def.SetpointTolerance
	}
	if opts.RampTolerance <= 0 {
		opts.RampTolerance = def.RampTolerance
	}
	if opts.FlowTolerance <= 0 {
		opts.FlowTolerance = def.FlowTolerance
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	il := &Interlock{env: env, rig: rig, auth: auth, audit: audit, opts: opts, log: log, state: NewScaledState(opts.TimeScale)}
	if err := il.bind(); err != nil {
		return nil, err
	}
	return il, nil
}

func (il *Interlock) bind() error {
	spec, rig := il.env.spec, il.rig
	var errs []error
	bad := func(path, format string, args ...any) { errs = appendConfigError(errs, path, format, args...) }
	if rig.Furnace == nil {
		bad("rig.furnace", "missing")
	} else {
		il.instr = append(il.instr, namedInstrument{il.zoneInstrument(0), roleFurnace, rig.Furnace})
	}
	for i := 1; i < len(il.env.zones); i++ {
		if c := il.controller(i); c == nil {
			bad("rig.zones."+il.env.zones[i].name, "missing")
		} else {
			il.instr = append(il.instr, namedInstrument{il.zoneInstrument(i), roleFurnace, c})
		}
	}
	if n := max(len(il.env.zones)-1, 0); len(rig.Zones) != n {
		bad("rig.zones", "%d controllers for the %d zones after the first", len(rig.Zones), n)
	}
	if rig.Gauge == nil {
		bad("rig.gauge", "missing")
	} else {
		il.instr = append(il.instr, namedInstrument{"gauge", roleGauge, rig.Gauge})
	}
	for _, g := range spec.Gases {
		fc := rig.Flows[g.Gas]
		if fc == nil {
			bad("rig.flows."+g.Gas, "missing")
			continue
		}
		if fs := fc.FullScale(); math.Abs(float64(fs-g.FullScale)) > 1e-9*float64(g.FullScale) {
			bad("rig.flows."+g.Gas, "full scale %v, the spec declares %v", fs, g.FullScale)
		}
		il.instr = append(il.instr, namedInstrument{"flow." + g.Gas, roleFlow, fc})
	}
	if len(rig.Flows) != len(spec.Gases) {
		bad("rig.flows", "%d controllers for %d declared gases", len(rig.Flows), len(spec.Gases))
	}
	for _, s := range spec.Switches {
		sw := rig.Switches[s.Name]
		if sw == nil {
			bad("rig.switches."+s.Name, "missing")
			continue
		}
		if sw.SafeState() != s.SafeState {
			bad("rig.switches."+s.Name, "safe state %v, the spec declares %v", sw.SafeState(), s.SafeState)
		}
		role := roleSwitch
		if s.InterlockOwned {
			role = roleRelay
		} else if _, ok := il.env.gasOfValve[s.Name]; ok {
			role = roleGasValve
		}
		il.instr = append(il.instr, namedInstrument{"switch." + s.Name, role, sw})
	}
	if len(rig.Switches) != len(spec.Switches) {
		bad("rig.switches", "%d switches for %d declared", len(rig.Switches), len(spec.Switches))
	}
	for _, in := range spec.Inputs {
		if rig.Inputs[in] == nil {
			bad("rig.inputs."+in, "missing")
		}
	}
	if (rig.Spectrometer == nil) != (spec.Spectrometer == nil) {
		bad("rig.spectrometer", "present in one of the rig and its spec only")
	} else if rig.Spectrometer != nil {
		il.instr = append(il.instr, namedInstrument{"spectrometer", roleSpectrometer, rig.Spectrometer})
	}
	return errors.Join(errs...)
}

// Envelope returns the envelope the interlock enforces.
func (il *Interlock) Envelope() *Envelope { return il.env }

// Latched reports whether a trip or an e-stop latched the interlock, and why.
func (il *Interlock) Latched() (bool, string) {
	il.mu.Lock()
	defer il.mu.Unlock()
	return il.latched, il.latchReason
}

// Result is what an executed action did.
type Result struct {
	Action   Action
	ReadBack float64 // the instrument's read-back in device units (1/0 for on/off)
	At       time.Time
	Spectrum *device.Spectrum // ActAcquire only
	// Waited is how long the interlock waited for a fresh reading before
	// it judged the action (0: its first snapshot was fresh). Late is not
	// stale: see awaitFresh.
	Waited time.Duration
}

func (il *Interlock) record(ctx context.Context, e Entry) error {
	e.At = il.opts.Clock()
	e.Envelope = il.env.Version()
	if err := il.audit.Record(context.WithoutCancel(ctx), e); err != nil {
		il.log.Error("audit record failed", "decision", e.Decision, "reason", e.Reason, "err", err)
		return fmt.Errorf("%w: %w", ErrAudit, err)
	}
	return nil
}

// refuse audits a refusal and returns err, joined with an audit failure.
func (il *Interlock) refuse(ctx context.Context, session string, a Action, rule Rule, err error) error {
	if aerr := il.record(ctx, Entry{SessionID: session, Action: &a, Decision: DecisionRefused, Rule: rule, Reason: err.Error()}); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// ApplyKeyed is apply for the envelope's own test packages (the property
// test and the HIL tests judge the interlock alone, with values the tool
// schemas would refuse first). Its key's package is internal to envelope/,
// so nothing outside envelope/ can call it; production actions go through
// Invoker, the tool pipeline (TestOnePathToActuators keeps it so).
func (il *Interlock) ApplyKeyed(_ rawkey.Key, ctx context.Context, token string, a Action) (Result, error) {
	return il.apply(ctx, token, a)
}

// apply is the single path by which an action reaches an actuator; only
// the Invoker calls it (Invoker.Invoke, Invoker.Act). In order:
// the latch (while latched only safe actions pass), the authoriser (an
// action toward the safe state, as Envelope.IsSafe judges it from the rig
// spec, needs an authentic token but not its scope), a fresh
// snapshot of the rig, the envelope's Check, an audit record of acceptance,
// the write with a timeout, the read-back, and an audit record of the
// outcome. Every refusal is audited and returned as a *Violation (wrapping
// ErrViolation) or an error wrapping ErrUnauthorized; a refused action never
// reaches an instrument.
func (il *Interlock) apply(ctx context.Context, token string, a Action) (Result, error) {
	il.applyMu.Lock()
	defer il.applyMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	il.mu.Lock()
	latched, why := il.latched, il.latchReason
	if !latched {
		done := make(chan struct{})
		il.inflight, il.done = cancel, done
		defer func() {
			il.mu.Lock()
			il.inflight, il.done = nil, nil
			il.mu.Unlock()
			close(done)
		}()
	}
	il.mu.Unlock()

	// Toward safe is decided here, from the rig spec, never claimed by the
	// caller: such an action needs an authentic token, not its scope.
	safe := il.env.IsSafe(a)
	var grant Grant
	var err error
	if safe {
		grant, err = il.auth.Authenticate(ctx, token)
	} else {
		grant, err = il.auth.Authorize(ctx, token, a)
	}
	if err != nil {
		return Result{}, il.refuse(ctx, "", a, "", fmt.Errorf("envelope: %v: %w: %w", a, ErrUnauthorized, err))
	}
	if latched && !safe {
		v := violation(RuleLatched, a.Channel(), "latched by %s: only safe outputs until an operator resets", why)
		return Result{}, il.refuse(ctx, grant.SessionID, a, v.Rule, v)
	}

	r := il.snapshot(ctx)
	il.mu.Lock()
	il.env.Observe(il.state, r)
	var v *Violation
	if err := il.env.Check(a, r, il.state); err != nil {
		v = err.(*Violation)
	}
	il.mu.Unlock()
	var waited time.Duration
	if v != nil && v.Rule == RuleStale { // late is not stale: wait, within a bound, for a fresh reading
		r, v, waited = il.awaitFresh(ctx, a, r, v)
	}
	if v != nil && v.Rule == RuleStale && ctx.Err() != nil {
		return Result{}, il.waitEnded(ctx, grant.SessionID, a, v, waited, safe)
	}
	if v != nil {
		e := Entry{SessionID: grant.SessionID, Action: &a, Decision: DecisionRefused, Rule: v.Rule, Reason: v.Error(),
			Readings: append(v.readings(r.At), il.env.snapshotReadings(r)...)}
		if aerr := il.record(ctx, e); aerr != nil {
			return Result{}, errors.Join(v, aerr)
		}
		return Result{}, v
	}
	if err := il.record(ctx, Entry{SessionID: grant.SessionID, Action: &a, Decision: DecisionAccepted, TowardSafe: safe}); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil { // SafeState cancelled us between check and write
		err = fmt.Errorf("envelope: %v: cancelled before the write: %w", a, err)
		_ = il.record(ctx, Entry{SessionID: grant.SessionID, Action: &a, Decision: DecisionFailed, Reason: err.Error(), TowardSafe: safe})
		return Result{}, err
	}

	timeout := il.opts.WriteTimeout
	if a.Kind == ActAcquire {
		timeout += a.Integration
	}
	wctx, wcancel := context.WithTimeout(ctx, timeout)
	res, err := il.execute(wctx, a)
	wcancel()
	if err != nil {
		if aerr := il.record(ctx, Entry{SessionID: grant.SessionID, Action: &a, Decision: DecisionFailed, Reason: err.Error(), TowardSafe: safe}); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return Result{}, err
	}
	res.Waited = waited
	il.mu.Lock()
	il.env.Accept(il.state, a, res.At)
	il.mu.Unlock()
	return res, il.record(ctx, Entry{SessionID: grant.SessionID, Action: &a, Decision: DecisionExecuted, TowardSafe: safe})
}

func readbackErr(a Action, got any) error {
	return fmt.Errorf("envelope: %s: wrote %v, read back %v: %w", a.Channel(), a, got, device.ErrReadback)
}

// furnaceStatus reads the controller of a heated zone; a sensor break does
// not invalidate the setpoint registers.
func furnaceStatus(ctx context.Context, c device.TemperatureController) (device.FurnaceStatus, error) {
	st, err := c.Status(ctx)
	if err != nil && !errors.Is(err, device.ErrSensor) {
		return st, err
	}
	return st, nil
}

func (il *Interlock) execute(ctx context.Context, a Action) (Result, error) {
	res := Result{Action: a}
	switch a.Kind {
	case ActSetpoint, ActRampRate, ActHeater:
		i := il.env.zoneIndex(a.Zone())
		if i < 0 {
			return res, fmt.Errorf("envelope: %v: no such zone", a)
		}
		f := il.controller(i)
		var err error
		switch a.Kind {
		case ActSetpoint:
			err = f.SetSetpoint(ctx, a.Temperature)
		case ActRampRate:
			err = f.SetRampRate(ctx, a.Rate)
		default:
			err = f.SetHeater(ctx, a.On)
		}
		if err != nil {
			return res, err
		}
		st, err := furnaceStatus(ctx, f)
		if err != nil {
			return res, err
		}
		switch a.Kind {
		case ActSetpoint:
			if math.Abs(float64(st.Setpoint-a.Temperature)) > float64(il.opts.SetpointTolerance) {
				return res, readbackErr(a, st.Setpoint)
			}
			res.ReadBack = float64(st.Setpoint)
		case ActRampRate:
			if math.Abs(float64(st.RampRate-a.Rate)) > float64(il.opts.RampTolerance) {
				return res, readbackErr(a, st.RampRate)
			}
			res.ReadBack = float64(st.RampRate)
		default:
			if st.HeaterEnabled != a.On {
				return res, readbackErr(a, onOff(st.HeaterEnabled))
			}
			res.ReadBack = boolValue(st.HeaterEnabled)
		}
	case ActFlow:
		fc := il.rig.Flows[a.Target]
		if err := fc.SetFlow(ctx, a.Flow); err != nil {
			return res, err
		}
		st, err := fc.ReadFlow(ctx)
		if err != nil {
			return res, err
		}
		if math.Abs(float64(st.Setpoint-a.Flow)) > float64(il.opts.FlowTolerance) {
			return res, readbackErr(a, st.Setpoint)
		}
		res.ReadBack = float64(st.Setpoint)
	case ActSwitch:
		sw := il.rig.Switches[a.Target]
		if err := sw.Set(ctx, a.On); err != nil {
			return res, err
		}
		on, err := sw.State(ctx)
		if err != nil {
			return res, err
		}
		if on != a.On {
			return res, readbackErr(a, onOff(on))
		}
		res.ReadBack = boolValue(on)
	case ActAcquire:
		sp, err := il.rig.Spectrometer.Acquire(ctx, a.Integration)
		if err != nil {
			return res, err
		}
		res.Spectrum = &sp
		res.ReadBack = sp.Integration.Seconds()
	default:
		return res, fmt.Errorf("envelope: %v: no such action", a)
	}
	res.At = il.opts.Clock()
	return res, nil
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
