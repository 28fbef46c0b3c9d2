package envelope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/device/catalog"
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
// every Action of the tool still passes Authorize inside Apply.
type ToolAuthorizer interface {
	Authorizer
	AuthorizeTool(ctx context.Context, token string, t catalog.Tool) (ToolGrant, error)
}

// Rules of tool invocation, recorded in the audit log when Invoke refuses a
// call before it reaches Apply.
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
	StageExecute    = "execute"    // Apply (envelope check, write, read-back) or the snapshot
	StageOutput     = "output"     // output construction and schema validation
)

// InvokeError is the error of a failed or refused invocation: the tool, the
// stage at which it stopped, and the cause. It unwraps to the cause, so
// errors.As finds a *Violation or a *catalog.ValidationError, and errors.Is
// matches ErrViolation, ErrUnauthorized, ErrRateLimited, catalog.ErrNotFound,
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

// ToolStats are the counters of one tool since the Invoker was built.
type ToolStats struct {
	Tool         ToolRef
	Calls        uint64        // every invocation that found the tool
	Succeeded    uint64        // executed and produced a valid output
	Refused      uint64        // refused by a rule: permission, rate limit, input, envelope, latch
	Failed       uint64        // failed while executing: instrument error, timeout, read-back, output
	TotalLatency time.Duration // summed over every call
	MaxLatency   time.Duration
}

// MeanLatency is the mean latency per call (0 without calls).
func (s ToolStats) MeanLatency() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.TotalLatency / time.Duration(s.Calls)
}

// InvokerOpts tunes an Invoker.
type InvokerOpts struct {
	Clock func() time.Time // time source of rate limits and latencies; time.Now if nil
}

// Invoker executes catalog tools through an Interlock (seeds/004 §1.5): look
// the tool up, authorise (the grant must hold the tool's permission), enforce
// its rate limit, validate the input against its schema, translate it into
// envelope Actions in device units, run them through Interlock.Apply (the
// envelope check, the write, the read-back and the audit all happen there),
// bounded by the tool's timeout, build the output and validate it against the
// output schema, and count calls, refusals, failures and latency per tool.
//
// The read-only rig.read_snapshot tool reads through the Interlock's View.
// An Invoker holds no instrument: it can do nothing that Apply refuses.
// Build one per Interlock: rate limits are counted per Invoker.
type Invoker struct {
	il    *Interlock
	reg   *catalog.Registry
	clock func() time.Time

	mu    sync.Mutex
	stats map[ToolRef]*ToolStats
	calls map[ToolRef][]time.Time // within the rate-limit window, oldest first
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
	return &Invoker{il: il, reg: reg, clock: opts.Clock, stats: map[ToolRef]*ToolStats{}, calls: map[ToolRef][]time.Time{}}, nil
}

// Stats returns the counters of every tool invoked so far, ordered by name
// and version.
func (iv *Invoker) Stats() []ToolStats {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	out := make([]ToolStats, 0, len(iv.stats))
	for _, s := range iv.stats {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ToolStats) int {
		if c := strings.Compare(a.Tool.Name, b.Tool.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Tool.Version, b.Tool.Version)
	})
	return out
}

// Stat returns the counters of one tool (zero counters if never invoked).
func (iv *Invoker) Stat(ref ToolRef) ToolStats {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if s, ok := iv.stats[ref]; ok {
		return *s
	}
	return ToolStats{Tool: ref}
}

// Invoke runs the tool ref with input (a JSON object; empty means {}) on
// behalf of token and returns its output, valid against the tool's output
// schema. Every error is an *InvokeError; a refusal never reaches an
// instrument. A refusal before Apply (permission, rate limit, input) is
// audited like Apply's own refusals.
func (iv *Invoker) Invoke(ctx context.Context, token string, ref ToolRef, input json.RawMessage) (json.RawMessage, error) {
	start := iv.clock()
	tool, err := iv.reg.Describe(ref.Name, ref.Version)
	if err != nil {
		return nil, &InvokeError{Tool: ref, Stage: StageLookup, Err: err}
	}
	ref = ToolRef{Name: tool.Name, Version: tool.Version}
	out, stage, err := iv.invoke(ctx, token, tool, ref, input)
	iv.count(ref, start, err)
	if err != nil {
		return nil, &InvokeError{Tool: ref, Stage: stage, Err: err}
	}
	return out, nil
}

func (iv *Invoker) count(ref ToolRef, start time.Time, err error) {
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
	case err == nil:
		s.Succeeded++
	case isRefusal(err):
		s.Refused++
	default:
		s.Failed++
	}
	s.TotalLatency += lat
	s.MaxLatency = max(s.MaxLatency, lat)
}

// refuse audits a refusal of Invoke before Apply and returns err.
func (iv *Invoker) refuse(ctx context.Context, session string, ref ToolRef, a *Action, rule Rule, err error) error {
	e := Entry{SessionID: session, Action: a, Decision: DecisionRefused, Rule: rule,
		Reason: "tool " + ref.String() + ": " + err.Error()}
	if aerr := iv.il.record(ctx, e); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// allow records a call against the tool's rate limit, or refuses it.
func (iv *Invoker) allow(ref ToolRef, rl catalog.RateLimit) error {
	if rl.MaxCalls <= 0 || rl.Per <= 0 {
		return nil
	}
	now := iv.clock()
	iv.mu.Lock()
	defer iv.mu.Unlock()
	calls := iv.calls[ref]
	i := 0
	for i < len(calls) && now.Sub(calls[i]) >= rl.Per {
		i++
	}
	calls = calls[i:]
	if len(calls) >= rl.MaxCalls {
		iv.calls[ref] = calls
		return fmt.Errorf("%w: %d calls in %v already (limit %d per %v)", ErrRateLimited, len(calls), now.Sub(calls[0]), rl.MaxCalls, rl.Per)
	}
	iv.calls[ref] = append(calls, now)
	return nil
}

func (iv *Invoker) invoke(ctx context.Context, token string, tool catalog.Tool, ref ToolRef, input json.RawMessage) (json.RawMessage, string, error) {
	// Who asks first (an authentic token); what the call does next; then
	// the tool's permission, unless the call moves an output toward its
	// safe state (the interlock's IsSafe, from the rig spec): scope limits
	// what a session may open, not what it may close.
	auth := iv.il.auth.(ToolAuthorizer) // checked by NewInvoker
	who, err := auth.Authenticate(ctx, token)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnauthorized, err)
		return nil, StagePermission, iv.refuse(ctx, "", ref, nil, "", err)
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := tool.ValidateInputJSON(input); err != nil {
		return nil, StageInput, iv.refuse(ctx, who.SessionID, ref, nil, RuleInvalidInput, err)
	}
	call, err := iv.translate(tool, input)
	if err != nil {
		stage := StageInput
		if errors.Is(err, catalog.ErrNotFound) {
			stage = StageLookup
		}
		return nil, stage, iv.refuse(ctx, who.SessionID, ref, nil, RuleInvalidInput, err)
	}
	if call.snapshot || !iv.il.env.IsSafe(call.action) {
		grant, err := auth.AuthorizeTool(ctx, token, tool)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUnauthorized, err)
			return nil, StagePermission, iv.refuse(ctx, who.SessionID, ref, nil, "", err)
		}
		if !slices.Contains(grant.Permissions, tool.Safety.Permission) {
			err := fmt.Errorf("%w: the grant lacks permission %s", ErrUnauthorized, tool.Safety.Permission)
			return nil, StagePermission, iv.refuse(ctx, grant.SessionID, ref, nil, RulePermission, err)
		}
	}
	if err := iv.allow(ref, tool.Safety.RateLimit); err != nil {
		return nil, StageRateLimit, iv.refuse(ctx, who.SessionID, ref, nil, RuleRateLimit, err)
	}

	ctx, cancel := context.WithTimeout(ctx, tool.Performance.Timeout)
	defer cancel()
	var raw []byte
	if call.snapshot {
		r := iv.il.View().Readings(ctx)
		if raw, err = snapshotOutput(iv.il, r); err != nil {
			return nil, StageExecute, err
		}
	} else {
		res, err := iv.il.Apply(ctx, token, call.action)
		if err != nil {
			return nil, StageExecute, err
		}
		if raw, err = call.output(res); err != nil {
			return nil, StageOutput, err
		}
	}
	if err := validateOutput(tool, raw); err != nil {
		return nil, StageOutput, err
	}
	return raw, "", nil
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
	switch tool.Name {
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
		return numeric(SetpointAction(t), in.Setpoint, in.Unit, func(v float64) (float64, error) {
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
		return numeric(RampRateAction(device.KelvinPerMinute(in.Rate)), in.Rate, in.Unit,
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
		switch tool.Name {
		case catalog.ToolSetHeater:
			return onOffCall(HeaterAction(in.On)), nil
		case catalog.ToolSetPump:
			return onOffCall(SwitchAction("pump", in.On)), nil
		}
		return onOffCall(SwitchAction("scrubber", in.On)), nil
	case catalog.ToolSetValve:
		var in struct {
			Valve string `json:"valve"`
			Open  bool   `json:"open"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		return onOffCall(SwitchAction(in.Valve, in.Open)), nil
	case catalog.ToolVent:
		var in struct {
			Open bool `json:"open"`
		}
		if err := decodeInput(input, &in); err != nil {
			return toolCall{}, err
		}
		valve := "vent_valve"
		if v := iv.il.env.cfg.Vent; v != nil && v.Valve != "" {
			valve = v.Valve
		}
		return onOffCall(SwitchAction(valve, in.Open)), nil
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
// was not read, or the furnace with its thermocouple open, fails the call
// (ErrIncomplete, with device.ErrSensor for a sensor fault): the tool never
// reports a number it does not have.
func snapshotOutput(il *Interlock, r Readings) ([]byte, error) {
	env := il.env
	var missing []string
	f := r.Furnace
	if !env.fresh(f.At, r) {
		missing = append(missing, "furnace")
	} else if f.Alarms&device.AlarmSensorBreak != 0 || !device.Finite(float64(f.ProcessValue)) {
		return nil, fmt.Errorf("envelope: snapshot: furnace thermocouple open: %w: %w", ErrIncomplete, device.ErrSensor)
	}
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
	alarms := []string{}
	for bit, name := range map[device.FurnaceAlarm]string{device.AlarmHighTemperature: "high_temperature",
		device.AlarmSensorBreak: "sensor_break", device.AlarmWatchdog: "watchdog", device.AlarmHeaterFault: "heater_fault"} {
		if f.Alarms&bit != 0 {
			alarms = append(alarms, name)
		}
	}
	slices.Sort(alarms)
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
	return json.Marshal(struct {
		At       string     `json:"at"`
		Furnace  furnaceOut `json:"furnace"`
		Pressure struct {
			Pascal float64 `json:"pascal"`
			Status string  `json:"status"`
			At     string  `json:"at"`
		} `json:"pressure"`
		Flows    map[string]flowOut `json:"flows"`
		Switches map[string]bool    `json:"switches"`
		Inputs   map[string]bool    `json:"inputs"`
	}{
		At: stampText(r.At),
		Furnace: furnaceOut{Temperature: round(f.ProcessValue.Celsius()), Setpoint: round(f.Setpoint.Celsius()),
			WorkingSetpoint: round(f.WorkingSetpoint.Celsius()), RampRate: float64(f.RampRate),
			Output: float64(f.OutputPower), Heater: f.HeaterEnabled, Alarms: alarms, At: stampText(f.At)},
		Pressure: struct {
			Pascal float64 `json:"pascal"`
			Status string  `json:"status"`
			At     string  `json:"at"`
		}{float64(p.Pressure), p.Status.String(), stampText(p.At)},
		Flows: flows, Switches: switches, Inputs: inputs,
	})
}
