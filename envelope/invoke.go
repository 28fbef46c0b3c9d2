package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/device/rig"
)

// ToolRef names a catalog tool by (name, version), the CapabilityRef of
// seeds/003. An empty Version selects the highest registered version.
type ToolRef struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

func (r ToolRef) String() string {
	if r.Version == "" {
		return r.Name
	}
	return r.Name + "@" + r.Version
}

// ToolGrant is what a ToolAuthorizer vouches for: the session a token
// belongs to and the catalog permissions its scope holds.
type ToolGrant struct {
	SessionID   string
	Permissions []catalog.Permission
}

// ToolAuthorizer is an Authorizer that also grants catalog permissions. The
// Invoker needs the Interlock's Authorizer to implement it; session/ does.
// The Invoker checks the tool's permission against the grant itself, and
// every Action of the tool still passes Authorize inside the interlock's apply.
type ToolAuthorizer interface {
	Authorizer
	AuthorizeTool(ctx context.Context, token string, t catalog.Tool) (ToolGrant, error)
}

// Rules of tool invocation, recorded in the audit log when Invoke refuses a
// call before it reaches the interlock.
const (
	RulePermission   Rule = "permission_required" // the grant lacks the tool's permission
	RuleRateLimit    Rule = "rate_limit"          // the tool's rate limit is exhausted
	RuleInvalidInput Rule = "invalid_input"       // the input does not match the tool's schema
)

// Invocation stages, named by InvokeError.
const (
	StageLookup     = "lookup"     // the tool is not in the catalog, or has no translation
	StagePermission = "permission" // authorisation and the tool's permission
	StageRateLimit  = "rate_limit" // the tool's rate limit
	StageInput      = "input"      // input schema validation and unit conversion
	StageExecute    = "execute"    // the interlock's apply (envelope check, write, read-back) or the snapshot
	StageOutput     = "output"     // output construction and schema validation
)

// InvokeError is the error of a failed or refused invocation: the tool, the
// stage at which it stopped, and the cause. It unwraps to the cause, so
// errors.As finds a *Violation or a *catalog.ValidationError, and errors.Is
// matches ErrViolation, ErrUnauthorized, ErrRateLimited, ErrNoHandler, catalog.ErrNotFound,
// catalog.ErrInvalidInput, catalog.ErrInvalidOutput and the device sentinels.
type InvokeError struct {
	Tool  ToolRef
	Stage string
	Err   error
}

func (e *InvokeError) Error() string {
	return fmt.Sprintf("envelope: tool %s: %s: %v", e.Tool, e.Stage, e.Err)
}

// Unwrap returns the cause.
func (e *InvokeError) Unwrap() error { return e.Err }

// Refused reports whether the invocation was refused (nothing was sent to an
// instrument because a rule said no) rather than failed while executing.
func (e *InvokeError) Refused() bool { return isRefusal(e.Err) }

func isRefusal(err error) bool {
	return errors.Is(err, ErrViolation) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRateLimited) ||
		errors.Is(err, catalog.ErrInvalidInput) || errors.Is(err, catalog.ErrNotFound)
}

// InvokerOpts tunes an Invoker.
type InvokerOpts struct {
	Clock func() time.Time // time source of latencies; time.Now if nil
	// RateClock is the rig's process time, the time of the tools' rate
	// limits: a simulator with a time scale lives faster than the wall
	// clock, and a limit of 60 calls a minute means a minute of the rig's
	// time. Clock if nil (a real rig: time scale 1).
	RateClock func() time.Time
}

// Invoker is the tool pipeline (seeds/004 §1.5) and the only caller of the
// interlock's apply: look the tool up, authenticate, validate the input
// against its schema, translate it into an envelope Action in device units,
// authorise (the grant must hold the tool's permission, unless the Action
// moves toward the safe state), enforce its rate limit (never refusing a
// toward-safe call), run the Action through the interlock's apply (the
// envelope check, the write, the read-back and the audit all happen there)
// bounded by the tool's timeout, build the output and validate it against
// the output schema, and count calls, refusals by rule, failures and
// latency per tool (ToolStats).
//
// The read-only rig.read_snapshot tool reads through the Interlock's View.
// A compute tool (catalog.CategoryCompute: raman.analyze) runs the handler
// the wiring code registered for it (SetCompute) instead of the interlock,
// with the same lookup, authentication, input schema, permission, rate
// limit, output schema, statistics and audit of refusals (compute.go).
// An Invoker holds no instrument: it can do nothing that the interlock
// refuses. Build one per Interlock: rate limits are counted per Invoker.
type Invoker struct {
	il        *Interlock
	reg       *catalog.Registry
	clock     func() time.Time
	rateClock func() time.Time

	mu      sync.Mutex
	stats   map[ToolRef]*ToolStats
	calls   map[ToolRef][]time.Time // within the rate-limit window, oldest first
	compute map[ToolRef]ComputeTool // the handlers of the compute tools (compute.go)
}

// NewInvoker returns an Invoker of the tools of reg through il. il's
// Authorizer must implement ToolAuthorizer.
func NewInvoker(il *Interlock, reg *catalog.Registry, opts InvokerOpts) (*Invoker, error) {
	if il == nil || reg == nil {
		return nil, errors.New("envelope: NewInvoker needs an interlock and a tool registry")
	}
	if _, ok := il.auth.(ToolAuthorizer); !ok {
		return nil, fmt.Errorf("envelope: NewInvoker: the interlock's authorizer %T grants no tool permissions (implement ToolAuthorizer)", il.auth)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.RateClock == nil {
		opts.RateClock = opts.Clock
	}
	return &Invoker{il: il, reg: reg, clock: opts.Clock, rateClock: opts.RateClock, stats: map[ToolRef]*ToolStats{}, calls: map[ToolRef][]time.Time{},
		compute: map[ToolRef]ComputeTool{}}, nil
}

// View is the read-only view of the Invoker's interlock.
func (iv *Invoker) View() *View { return iv.il.View() }

// Stats returns the counters of every tool invoked so far, ordered by name
// and version.
func (iv *Invoker) Stats() []ToolStats {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	out := make([]ToolStats, 0, len(iv.stats))
	for _, s := range iv.stats {
		out = append(out, s.clone())
	}
	sort.Slice(out, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b ToolStats) int {
			if c := strings.Compare(a.Tool.Name, b.Tool.Name); c != 0 {
				return c
			}
			return strings.Compare(a.Tool.Version, b.Tool.Version)
		}(out[i], out[j]) < 0
	})
	return out
}

// Stat returns the counters of one tool (zero counters if never invoked).
func (iv *Invoker) Stat(ref ToolRef) ToolStats {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if s, ok := iv.stats[ref]; ok {
		return s.clone()
	}
	return ToolStats{Tool: ref}
}

func (s *ToolStats) clone() ToolStats {
	c := *s
	if s.RefusedBy != nil {
		c.RefusedBy = maps.Clone(s.RefusedBy)
	}
	return c
}

// Invoke runs the tool ref with input (a JSON object; empty means {}) on
// behalf of token and returns its output, valid against the tool's output
// schema. Every error is an *InvokeError; a refusal never reaches an
// instrument. A refusal before the interlock (permission, rate limit,
// input) is audited like the interlock's own refusals.
func (iv *Invoker) Invoke(ctx context.Context, token string, ref ToolRef, input json.RawMessage) (json.RawMessage, error) {
	out, _, err := iv.call(ctx, token, ref, input)
	return out, err
}

// Act performs a as a call of its catalog tool, resolved by name and
// version (ToolFor): the whole of Invoke's pipeline (permission, rate
// limit, input schema, the interlock, output schema, statistics, audit),
// and returns the interlock's Result (the read-back, the spectrum) besides.
// It is the path of every action a recipe takes. Every error is an
// *InvokeError; an envelope refusal unwraps (errors.As) to its *Violation.
func (iv *Invoker) Act(ctx context.Context, token string, a Action) (Result, error) {
	ref, input, err := iv.ToolFor(a)
	if err != nil {
		stage, rule := StageLookup, RuleUnknownTool
		if errors.Is(err, catalog.ErrInvalidInput) {
			stage, rule = StageInput, RuleInvalidInput
		}
		return Result{}, &InvokeError{Tool: ref, Stage: stage, Err: iv.refuse(ctx, "", ref, &a, rule, err)}
	}
	_, res, err := iv.call(ctx, token, ref, input)
	return res, err
}

// ToolFor returns the catalog call that performs a on this rig: the tool,
// pinned at catalog.BuiltinVersion, and its input in device units (kelvin,
// kelvin per minute, sccm, milliseconds), which the tool translates back
// into exactly a. A switch is the tool of its role on the rig: the vent and
// gate valves of the envelope's vent section, the pump, the scrubber, or a
// gas line valve. An action no tool performs (the interlock relay, which
// only Arm and the halts move) is catalog.ErrNotFound.
func (iv *Invoker) ToolFor(a Action) (ToolRef, json.RawMessage, error) {
	ref := func(name string) ToolRef { return ToolRef{Name: name, Version: catalog.BuiltinVersion} }
	var (
		r  ToolRef
		in any
	)
	switch a.Kind { // a zone's tools: ZoneTool(zone, op), furnace.set_setpoint for the zone furnace
	case ActSetpoint:
		r, in = ref(catalog.ZoneTool(a.Zone(), catalog.OpSetSetpoint)), map[string]any{"setpoint": float64(a.Temperature), "unit": "kelvin"}
	case ActRampRate:
		r, in = ref(catalog.ZoneTool(a.Zone(), catalog.OpSetRampRate)), map[string]any{"rate": float64(a.Rate), "unit": "kelvin_per_minute"}
	case ActHeater:
		r, in = ref(catalog.ZoneTool(a.Zone(), catalog.OpSetHeater)), map[string]any{"on": a.On}
	case ActFlow:
		r, in = ref(catalog.ToolSetFlow), map[string]any{"gas": a.Target, "flow": float64(a.Flow), "unit": "sccm"}
	case ActAcquire:
		if a.Integration%time.Millisecond != 0 {
			return ref(catalog.ToolAcquire), nil, &catalog.ValidationError{Name: catalog.ToolAcquire, Version: catalog.BuiltinVersion,
				Which: "input", Err: fmt.Errorf("integration %v is not a whole number of milliseconds", a.Integration)}
		}
		r, in = ref(catalog.ToolAcquire), map[string]any{"integration_ms": a.Integration.Milliseconds()}
	case ActSwitch:
		vent, gate := iv.ventValves()
		switch a.Target {
		case vent:
			r, in = ref(catalog.ToolVent), map[string]any{"open": a.On}
		case gate:
			r, in = ref(catalog.ToolSetGate), map[string]any{"open": a.On}
		case iv.il.env.spec.Roles.Pump:
			r, in = ref(catalog.ToolSetPump), map[string]any{"on": a.On}
		case iv.il.env.spec.Roles.Scrubber:
			r, in = ref(catalog.ToolSetScrubber), map[string]any{"on": a.On}
		default:
			if !iv.gasValve(a.Target) {
				return ToolRef{Name: a.Kind.String()}, nil, fmt.Errorf("envelope: no tool drives switch %q: %w", a.Target, catalog.ErrNotFound)
			}
			r, in = ref(catalog.ToolSetValve), map[string]any{"valve": a.Target, "open": a.On}
		}
	default:
		return ToolRef{Name: a.Kind.String()}, nil, fmt.Errorf("envelope: no tool performs %v: %w", a, catalog.ErrNotFound)
	}
	raw, err := json.Marshal(in)
	if err != nil { // a NaN or an infinity: no JSON number holds it
		return r, nil, &catalog.ValidationError{Name: r.Name, Version: r.Version, Which: "input", Err: err}
	}
	return r, raw, nil
}

// ventValves are the names of the vent and gate valves (Envelope.VentValves).
func (iv *Invoker) ventValves() (vent, gate string) { return iv.il.env.VentValves() }

func (iv *Invoker) gasValve(name string) bool {
	for _, g := range iv.il.env.spec.Gases {
		if g.Valve == name {
			return true
		}
	}
	return false
}

// actionOf is the action a valid input of tool would perform, or nil (a
// snapshot, an invalid input): the audit of a refusal names it.
func (iv *Invoker) actionOf(tool catalog.Tool, input json.RawMessage) *Action {
	if tool.ValidateInputJSON(input) != nil {
		return nil
	}
	call, err := iv.translate(tool, input)
	if err != nil || call.snapshot {
		return nil
	}
	return &call.action
}

// outcome is what one invocation did, for the caller and the statistics.
type outcome struct {
	out   json.RawMessage
	res   Result
	stage string // where it stopped (err != nil)
	rule  Rule   // the rule of a refusal
	safe  bool   // an action toward the safe state
	err   error
}

func (iv *Invoker) call(ctx context.Context, token string, ref ToolRef, input json.RawMessage) (json.RawMessage, Result, error) {
	start := iv.clock()
	tool, err := iv.reg.Describe(ref.Name, ref.Version)
	if err != nil {
		return nil, Result{}, &InvokeError{Tool: ref, Stage: StageLookup, Err: err}
	}
	ref = ToolRef{Name: tool.Name, Version: tool.Version}
	o := iv.invoke(ctx, token, tool, ref, input)
	iv.count(ref, start, &o)
	if o.err != nil {
		return nil, o.res, &InvokeError{Tool: ref, Stage: o.stage, Err: o.err}
	}
	return o.out, o.res, nil
}

// count adds o to the tool's statistics. It allocates only for the first
// call of a tool and the first refusal of a tool by a rule.
func (iv *Invoker) count(ref ToolRef, start time.Time, o *outcome) {
	lat := max(iv.clock().Sub(start), 0)
	iv.mu.Lock()
	defer iv.mu.Unlock()
	s := iv.stats[ref]
	if s == nil {
		s = &ToolStats{Tool: ref}
		iv.stats[ref] = s
	}
	s.Calls++
	switch {
	case o.err == nil:
		s.Succeeded++
	case isRefusal(o.err):
		s.Refused++
		rule := o.rule
		if rule == "" {
			rule = refusalRule(o.err)
		}
		if s.RefusedBy == nil {
			s.RefusedBy = map[Rule]uint64{}
		}
		s.RefusedBy[rule]++
	default:
		s.Failed++
	}
	if o.safe {
		s.TowardSafe++
	}
	if w := o.freshWait(); w > 0 {
		s.FreshWaits++
		s.MaxFreshWait = max(s.MaxFreshWait, w)
	}
	s.TotalLatency += lat
	s.MaxLatency = max(s.MaxLatency, lat)
	s.Latency.Observe(lat)
}

// refuse audits a refusal of Invoke before the interlock and returns err.
func (iv *Invoker) refuse(ctx context.Context, session string, ref ToolRef, a *Action, rule Rule, err error) error {
	e := Entry{SessionID: session, Action: a, Decision: DecisionRefused, Rule: rule,
		Reason: "tool " + ref.String() + ": " + err.Error()}
	if aerr := iv.il.record(ctx, e); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// allow records a call against the tool's rate limit, or refuses it. A
// call toward the safe state is recorded but never refused: a safe action
// must always pass (it still counts against the window, so a burst of
// safe calls delays the next unsafe one).
func (iv *Invoker) allow(ref ToolRef, rl catalog.RateLimit, safe bool) error {
	if rl.MaxCalls <= 0 || rl.Per <= 0 {
		return nil
	}
	now := iv.rateClock()
	iv.mu.Lock()
	defer iv.mu.Unlock()
	calls := iv.calls[ref]
	i := 0
	for i < len(calls) && now.Sub(calls[i]) >= rl.Per {
		i++
	}
	calls = calls[i:]
	if len(calls) >= rl.MaxCalls && !safe {
		iv.calls[ref] = calls
		return fmt.Errorf("%w: %d calls in %v already (limit %d per %v)", ErrRateLimited, len(calls), now.Sub(calls[0]), rl.MaxCalls, rl.Per)
	}
	if len(calls) >= rl.MaxCalls { // safe: keep the window bounded
		calls = calls[1:]
	}
	iv.calls[ref] = append(calls, now)
	return nil
}

func (iv *Invoker) invoke(ctx context.Context, token string, tool catalog.Tool, ref ToolRef, input json.RawMessage) outcome {
	refused := func(stage string, rule Rule, err error) outcome {
		return outcome{stage: stage, rule: rule, err: err}
	}
	// Who asks first (an authentic token); what the call does next; then
	// the tool's permission, unless the call moves an output toward its
	// safe state (the interlock's IsSafe, from the rig spec): scope limits
	// what a session may open, not what it may close.
	auth := iv.il.auth.(ToolAuthorizer) // checked by NewInvoker
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`{}`)
	}
	if tool.Compute() { // no Action, never the interlock (compute.go)
		return iv.invokeCompute(ctx, token, tool, ref, input)
	}
	who, err := auth.Authenticate(ctx, token)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnauthorized, err)
		return refused(StagePermission, RuleUnauthorized, iv.refuse(ctx, "", ref, iv.actionOf(tool, input), "", err))
	}
	if err := tool.ValidateInputJSON(input); err != nil {
		return refused(StageInput, RuleInvalidInput, iv.refuse(ctx, who.SessionID, ref, nil, RuleInvalidInput, err))
	}
	call, err := iv.translate(tool, input)
	if err != nil {
		stage, rule := StageInput, RuleInvalidInput
		if errors.Is(err, catalog.ErrNotFound) {
			stage, rule = StageLookup, RuleUnknownTool
		}
		return refused(stage, rule, iv.refuse(ctx, who.SessionID, ref, nil, RuleInvalidInput, err))
	}
	var act *Action // what the call would do, for the audit of a refusal
	if !call.snapshot {
		act = &call.action
	}
	safe := !call.snapshot && iv.il.env.IsSafe(call.action)
	if !safe {
		grant, err := auth.AuthorizeTool(ctx, token, tool)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUnauthorized, err)
			return refused(StagePermission, RulePermission, iv.refuse(ctx, who.SessionID, ref, act, "", err))
		}
		if !slices.Contains(grant.Permissions, tool.Safety.Permission) {
			err := fmt.Errorf("%w: the grant lacks permission %s", ErrUnauthorized, tool.Safety.Permission)
			return refused(StagePermission, RulePermission, iv.refuse(ctx, grant.SessionID, ref, act, RulePermission, err))
		}
	}
	if err := iv.allow(ref, tool.Safety.RateLimit, safe); err != nil {
		return refused(StageRateLimit, RuleRateLimit, iv.refuse(ctx, who.SessionID, ref, act, RuleRateLimit, err))
	}

	ctx, cancel := context.WithTimeout(ctx, tool.Performance.Timeout)
	defer cancel()
	o := outcome{safe: safe}
	if call.snapshot {
		r := iv.il.View().Readings(ctx)
		if o.out, o.err = snapshotOutput(iv.il, r); o.err != nil {
			o.stage = StageExecute
			return o
		}
	} else {
		o.res, o.err = iv.il.apply(ctx, token, call.action)
		if o.err != nil {
			o.stage = StageExecute
			return o
		}
		if o.out, o.err = call.output(o.res); o.err != nil {
			o.stage = StageOutput
			return o
		}
	}
	if o.err = validateOutput(tool, o.out); o.err != nil {
		o.stage, o.out = StageOutput, nil
	}
	return o
}

func validateOutput(tool catalog.Tool, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("envelope: tool %s: output: %w", tool.Ref(), err)
	}
	return tool.ValidateOutput(v)
}

// toolCall is a tool input translated into envelope terms.
type toolCall struct {
	snapshot bool
	action   Action
	output   func(Result) ([]byte, error)
}

// writeOut is the output of every actuator tool (catalog writeOutput).
type writeOut struct {
	Channel   string `json:"channel"`
	Requested any    `json:"requested"`
	ReadBack  any    `json:"read_back"`
	Unit      string `json:"unit"`
	At        string `json:"at"`
}

func stampText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func decodeInput(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &catalog.ValidationError{Which: "input", Err: err}
	}
	return nil
}

// numeric builds the call of a tool that sets a number in a caller's unit.
func numeric(a Action, value float64, unit string, back func(float64) (float64, error)) toolCall {
	return toolCall{action: a, output: func(res Result) ([]byte, error) {
		rb, err := back(res.ReadBack)
		if err != nil {
			return nil, err
		}
		return json.Marshal(writeOut{Channel: a.Channel(), Requested: value, ReadBack: rb, Unit: unit, At: stampText(res.At)})
	}}
}

func onOffCall(a Action) toolCall {
	return toolCall{action: a, output: func(res Result) ([]byte, error) {
		return json.Marshal(writeOut{Channel: a.Channel(), Requested: a.On, ReadBack: res.ReadBack == 1, Unit: "", At: stampText(res.At)})
	}}
}

// translate turns a validated input into a call. A unit the schema admits but
// device cannot convert is an input error, never a guess.
func (iv *Invoker) translate(tool catalog.Tool, input []byte) (toolCall, error) {
	if !strings.HasPrefix(tool.Version, "1.") {
		return toolCall{}, fmt.Errorf("envelope: tool %s: no translation for this major version: %w", tool.Ref(), catalog.ErrNotFound)
	}
	inputErr := func(err error) error {
		return &catalog.ValidationError{Name: tool.Name, Version: tool.Version, Which: "input", Err: err}
	}
	// A heated zone's tools (catalog.ZoneOf: furnace.set_setpoint,
	// growth.set_heater, ...) act on that zone's channels and controller;
	// a zone the rig lacks is refused by the envelope (unknown_channel).
	name, zn := tool.Name, ""
	if z, op, ok := catalog.ZoneOf(tool.Name); ok {
		name, zn = catalog.ZoneTool(rig.FurnaceName, op), z
	}
	switch name {
	case catalog.ToolSetSetpoint:
		var in struct {
			Setpoint float64 `json:"setpoint"`
			Unit     string  `json:"unit"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		t, err := device.TemperatureIn(in.Setpoint, in.Unit)
		if err != nil {
			return toolCall{}, inputErr(err)
		}
		return numeric(ZoneSetpointAction(zn, t), in.Setpoint, in.Unit, func(v float64) (float64, error) {
			return device.Temperature(v).In(in.Unit)
		}), nil
	case catalog.ToolSetRampRate:
		var in struct {
			Rate float64 `json:"rate"`
			Unit string  `json:"unit"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		if in.Unit != "celsius_per_minute" && in.Unit != "kelvin_per_minute" {
			return toolCall{}, inputErr(fmt.Errorf("unknown rate unit %q", in.Unit))
		}
		// A temperature difference is the same in kelvin and in degrees Celsius.
		return numeric(ZoneRampRateAction(zn, device.KelvinPerMinute(in.Rate)), in.Rate, in.Unit,
			func(v float64) (float64, error) { return v, nil }), nil
	case catalog.ToolSetFlow:
		var in struct {
			Gas  string  `json:"gas"`
			Flow float64 `json:"flow"`
			Unit string  `json:"unit"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		f, err := device.FlowIn(in.Flow, in.Unit)
		if err != nil {
			return toolCall{}, inputErr(err)
		}
		return numeric(FlowAction(in.Gas, f), in.Flow, in.Unit, func(v float64) (float64, error) {
			return device.Flow(v).In(in.Unit)
		}), nil
	case catalog.ToolSetHeater, catalog.ToolSetPump, catalog.ToolSetScrubber:
		var in struct {
			On bool `json:"on"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		switch name {
		case catalog.ToolSetHeater:
			return onOffCall(ZoneHeaterAction(zn, in.On)), nil
		case catalog.ToolSetPump:
			return iv.roleCall(tool.Name, iv.il.env.spec.Roles.Pump, in.On)
		}
		return iv.roleCall(tool.Name, iv.il.env.spec.Roles.Scrubber, in.On)
	case catalog.ToolSetValve:
		var in struct {
			Valve string `json:"valve"`
			Open  bool   `json:"open"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		return onOffCall(SwitchAction(in.Valve, in.Open)), nil
	case catalog.ToolVent, catalog.ToolSetGate:
		var in struct {
			Open bool `json:"open"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		vent, gate := iv.ventValves()
		if tool.Name == catalog.ToolSetGate {
			return onOffCall(SwitchAction(gate, in.Open)), nil
		}
		return onOffCall(SwitchAction(vent, in.Open)), nil
	case catalog.ToolAcquire:
		var in struct {
			IntegrationMS int64 `json:"integration_ms"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		a := AcquireAction(time.Duration(in.IntegrationMS) * time.Millisecond)
		return toolCall{action: a, output: func(res Result) ([]byte, error) {
			sp := res.Spectrum
			if sp == nil {
				return nil, fmt.Errorf("envelope: %s: no spectrum returned", a.Channel())
			}
			return json.Marshal(struct {
				Shift         []float64 `json:"shift"`
				Counts        []float64 `json:"counts"`
				IntegrationMS int64     `json:"integration_ms"`
				At            string    `json:"at"`
			}{sp.Shift, sp.Counts, sp.Integration.Milliseconds(), stampText(sp.At)})
		}}, nil
	case catalog.ToolSnapshot:
		var in struct{}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		return toolCall{snapshot: true}, nil
	}
	return toolCall{}, fmt.Errorf("envelope: tool %s: the interlock has no translation for it: %w", tool.Ref(), catalog.ErrNotFound)
}

// snapshotOutput is the rig.read_snapshot output of r. A part of the rig that
// was not read, or a zone with its thermocouple open, fails the call
// (ErrIncomplete, with device.ErrSensor for a sensor fault): the tool never
// reports a number it does not have. The first heated zone is the output's
// furnace; the others (a rig of several zones) are under zones, by name.
func snapshotOutput(il *Interlock, r Readings) ([]byte, error) {
	env := il.env
	var missing []string
	for i := range env.zones {
		f := env.zoneReading(r, i)
		if !env.fresh(f.At, r) {
			missing = append(missing, env.zoneWhat(i, "furnace"))
		} else if f.Alarms&device.AlarmSensorBreak != 0 || !device.Finite(float64(f.ProcessValue)) {
			return nil, fmt.Errorf("envelope: snapshot: %s thermocouple open: %w: %w", env.zoneWhat(i, "furnace"), ErrIncomplete, device.ErrSensor)
		}
	}
	f := r.Furnace
	p := r.Pressure
	if !env.fresh(p.At, r) || !device.Finite(float64(p.Pressure)) {
		missing = append(missing, "gauge")
	}
	type flowOut struct {
		Flow     float64 `json:"flow_sccm"`
		Setpoint float64 `json:"setpoint_sccm"`
		At       string  `json:"at"`
	}
	flows := map[string]flowOut{}
	for _, g := range env.spec.Gases {
		fs, ok := r.Flows[g.Gas]
		if !ok || !env.fresh(fs.At, r) || !device.Finite(float64(fs.Flow)) || !device.Finite(float64(fs.Setpoint)) {
			missing = append(missing, "flow."+g.Gas)
			continue
		}
		flows[g.Gas] = flowOut{Flow: float64(fs.Flow), Setpoint: float64(fs.Setpoint), At: stampText(fs.At)}
	}
	levels := func(prefix string, names []string, m map[string]Level) map[string]bool {
		out := map[string]bool{}
		for _, n := range names {
			l, ok := m[n]
			if !ok || !env.fresh(l.At, r) {
				missing = append(missing, prefix+n)
				continue
			}
			out[n] = l.On
		}
		return out
	}
	swNames := make([]string, 0, len(env.spec.Switches))
	for _, s := range env.spec.Switches {
		swNames = append(swNames, s.Name)
	}
	switches := levels("switch.", swNames, r.Switches)
	inputs := levels("input.", env.spec.Inputs, r.Inputs)
	if len(missing) > 0 {
		return nil, fmt.Errorf("envelope: snapshot: no fresh reading of %s: %w", strings.Join(missing, ", "), ErrIncomplete)
	}
	type furnaceOut struct {
		Temperature     float64  `json:"temperature_c"`
		Setpoint        float64  `json:"setpoint_c"`
		WorkingSetpoint float64  `json:"working_setpoint_c"`
		RampRate        float64  `json:"ramp_rate_c_per_min"`
		Output          float64  `json:"output_percent"`
		Heater          bool     `json:"heater_enabled"`
		Alarms          []string `json:"alarms"`
		At              string   `json:"at"`
	}
	round := func(v float64) float64 { return math.Round(v*1e6) / 1e6 }
	out := func(f device.FurnaceStatus) furnaceOut {
		alarms := []string{}
		for bit, name := range map[device.FurnaceAlarm]string{device.AlarmHighTemperature: "high_temperature",
			device.AlarmSensorBreak: "sensor_break", device.AlarmWatchdog: "watchdog", device.AlarmHeaterFault: "heater_fault"} {
			if f.Alarms&bit != 0 {
				alarms = append(alarms, name)
			}
		}
		slices.Sort(alarms)
		return furnaceOut{Temperature: round(f.ProcessValue.Celsius()), Setpoint: round(f.Setpoint.Celsius()),
			WorkingSetpoint: round(f.WorkingSetpoint.Celsius()), RampRate: float64(f.RampRate),
			Output: float64(f.OutputPower), Heater: f.HeaterEnabled, Alarms: alarms, At: stampText(f.At)}
	}
	var zones map[string]furnaceOut // the zones after the first: none on a rig of one
	for i := 1; i < len(env.zones); i++ {
		if zones == nil {
			zones = map[string]furnaceOut{}
		}
		zones[env.zones[i].name] = out(env.zoneReading(r, i))
	}
	return json.Marshal(struct {
		At       string                `json:"at"`
		Furnace  furnaceOut            `json:"furnace"`
		Zones    map[string]furnaceOut `json:"zones,omitempty"`
		Pressure struct {
			Pascal float64 `json:"pascal"`
			Status string  `json:"status"`
			At     string  `json:"at"`
		} `json:"pressure"`
		Flows    map[string]flowOut `json:"flows"`
		Switches map[string]bool    `json:"switches"`
		Inputs   map[string]bool    `json:"inputs"`
	}{
		At: stampText(r.At), Furnace: out(f), Zones: zones,
		Pressure: struct {
			Pascal float64 `json:"pascal"`
			Status string  `json:"status"`
			At     string  `json:"at"`
		}{float64(p.Pressure), p.Status.String(), stampText(p.At)},
		Flows: flows, Switches: switches, Inputs: inputs,
	})
}

// roleCall is the call of a tool that drives the output of a role (the
// pump, the scrubber); a rig without that output has no such call.
func (iv *Invoker) roleCall(tool, output string, on bool) (toolCall, error) {
	if output == "" {
		return toolCall{}, fmt.Errorf("envelope: tool %s: the rig's layout has no output for it: %w", tool, catalog.ErrNotFound)
	}
	return onOffCall(SwitchAction(output, on)), nil
}
