package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"hcp-edge/device"
	"hcp-edge/device/catalog"
)

// toolTokens authorises "ok" with every permission, "reader" with rig.read
// only (both as session s-1), and refuses anything else.
type toolTokens struct{}

func (toolTokens) Authorize(_ context.Context, token string, _ Action) (Grant, error) {
	if token != "ok" && token != "reader" {
		return Grant{}, errBadToken
	}
	return Grant{SessionID: "s-1"}, nil
}

func (toolTokens) Authenticate(ctx context.Context, token string) (Grant, error) {
	return toolTokens{}.Authorize(ctx, token, Action{})
}

func (toolTokens) AuthorizeTool(_ context.Context, token string, _ catalog.Tool) (ToolGrant, error) {
	switch token {
	case "ok":
		return ToolGrant{SessionID: "s-1", Permissions: []catalog.Permission{catalog.PermissionRead,
			catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}}, nil
	case "reader":
		return ToolGrant{SessionID: "s-1", Permissions: []catalog.Permission{catalog.PermissionRead}}, nil
	}
	return ToolGrant{}, errBadToken
}

type invokeFixture struct {
	*fixture
	iv *Invoker
}

func newInvokeFixture(t testing.TB, reg *catalog.Registry, rigHook func(*Rig)) *invokeFixture {
	t.Helper()
	p := newPlant(t0)
	rig, sws := fakeRig(p)
	if rigHook != nil {
		rigHook(&rig)
	}
	audit := &auditLog{}
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	il, err := NewInterlock(testEnvelope(t), rig, toolTokens{}, audit, opts)
	if err != nil {
		t.Fatal(err)
	}
	if reg == nil {
		if reg, err = catalog.Builtin(SimRigSpec().Lines()); err != nil {
			t.Fatal(err)
		}
	}
	iv, err := NewInvoker(il, reg, InvokerOpts{Clock: p.clock})
	if err != nil {
		t.Fatal(err)
	}
	return &invokeFixture{fixture: &fixture{il: il, p: p, audit: audit, sw: sws}, iv: iv}
}

func ref(name string) ToolRef { return ToolRef{Name: name, Version: catalog.BuiltinVersion} }

func TestInvokeExecutes(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		input   string
		setup   func(*plant)
		channel string  // the plant channel written
		value   float64 // in device units
		want    map[string]any
	}{
		{"setpoint in celsius", catalog.ToolSetSetpoint, `{"setpoint": 700, "unit": "celsius"}`, nil,
			ChannelSetpoint, 973.15, map[string]any{"channel": ChannelSetpoint, "requested": 700.0, "read_back": 700.0, "unit": "celsius"}},
		{"setpoint in kelvin", catalog.ToolSetSetpoint, `{"setpoint": 500, "unit": "kelvin"}`, nil,
			ChannelSetpoint, 500, map[string]any{"requested": 500.0, "read_back": 500.0, "unit": "kelvin"}},
		{"ramp", catalog.ToolSetRampRate, `{"rate": 10, "unit": "celsius_per_minute"}`, nil,
			ChannelRampRate, 10, map[string]any{"read_back": 10.0, "unit": "celsius_per_minute"}},
		{"heater on under vacuum", catalog.ToolSetHeater, `{"on": true}`, nil,
			ChannelHeater, 1, map[string]any{"channel": ChannelHeater, "requested": true, "read_back": true, "unit": ""}},
		{"Ar flow in slm", catalog.ToolSetFlow, `{"gas": "Ar", "flow": 0.2, "unit": "slm"}`, nil,
			FlowChannel("Ar"), 200, map[string]any{"channel": "flow.Ar", "requested": 0.2, "read_back": 0.2, "unit": "slm"}},
		{"H2S flow, interlocks met", catalog.ToolSetFlow, `{"gas": "H2S", "flow": 5, "unit": "sccm"}`, nil,
			FlowChannel("H2S"), 5, map[string]any{"read_back": 5.0}},
		{"gate valve", catalog.ToolSetGate, `{"open": true}`, nil,
			SwitchChannel("gate_valve"), 1, map[string]any{"channel": "switch.gate_valve", "read_back": true}},
		{"pump", catalog.ToolSetPump, `{"on": true}`, nil, SwitchChannel("pump"), 1, map[string]any{"read_back": true}},
		{"scrubber off", catalog.ToolSetScrubber, `{"on": false}`, nil, SwitchChannel("scrubber"), 0, map[string]any{"read_back": false}},
		{"vent cold chamber", catalog.ToolVent, `{"open": true}`, nil, SwitchChannel("vent_valve"), 1, map[string]any{"channel": "switch.vent_valve"}},
		{"acquire", catalog.ToolAcquire, `{"integration_ms": 1500}`, nil, ChannelIntegration, 1.5,
			map[string]any{"integration_ms": 1500.0, "shift": []any{150.0, 550.0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newInvokeFixture(t, nil, nil)
			if tt.setup != nil {
				tt.setup(f.p)
			}
			out, err := f.iv.Invoke(context.Background(), "ok", ref(tt.tool), json.RawMessage(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if fmt.Sprint(got[k]) != fmt.Sprint(v) {
					t.Errorf("output %s = %v, want %v (all: %s)", k, got[k], v, out)
				}
			}
			if len(f.p.writes) != 1 || f.p.writes[0].channel != tt.channel || !closeTo(f.p.writes[0].value, tt.value) {
				t.Fatalf("writes %+v, want one %s = %v", f.p.writes, tt.channel, tt.value)
			}
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got["at"])); err != nil {
				t.Errorf("at: %v", err)
			}
			s := f.iv.Stat(ref(tt.tool))
			if s.Calls != 1 || s.Succeeded != 1 || s.Refused+s.Failed != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestInvokeRefuses(t *testing.T) {
	tests := []struct {
		name   string
		token  string
		ref    ToolRef
		input  string
		setup  func(*plant)
		stage  string
		is     error
		rule   Rule   // the audited rule, "" for none
		path   string // for input errors: the JSON pointer of the bad field
		stated bool   // counted in the tool's statistics
	}{
		{"unknown tool", "ok", ToolRef{Name: "furnace.explode"}, `{}`, nil, StageLookup, catalog.ErrNotFound, "", "", false},
		{"unknown version", "ok", ToolRef{Name: catalog.ToolSetHeater, Version: "2.0.0"}, `{}`, nil, StageLookup, catalog.ErrNotFound, "", "", false},
		{"bad token", "stolen", ref(catalog.ToolSetHeater), `{"on": true}`, nil, StagePermission, ErrUnauthorized, "", "", true},
		{"missing permission", "reader", ref(catalog.ToolSetHeater), `{"on": true}`, nil, StagePermission, ErrUnauthorized, RulePermission, "", true},
		{"missing unit", "ok", ref(catalog.ToolSetSetpoint), `{"setpoint": 700}`, nil, StageInput, catalog.ErrInvalidInput, RuleInvalidInput, "", true},
		{"wrong type", "ok", ref(catalog.ToolSetSetpoint), `{"setpoint": "hot", "unit": "celsius"}`, nil, StageInput, catalog.ErrInvalidInput, RuleInvalidInput, "/setpoint", true},
		{"unknown gas", "ok", ref(catalog.ToolSetFlow), `{"gas": "Cl2", "flow": 1, "unit": "sccm"}`, nil, StageInput, catalog.ErrInvalidInput, RuleInvalidInput, "/gas", true},
		{"extra field", "ok", ref(catalog.ToolSetHeater), `{"on": true, "force": true}`, nil, StageInput, catalog.ErrInvalidInput, RuleInvalidInput, "", true},
		{"not JSON", "ok", ref(catalog.ToolSetHeater), `{"on": tru`, nil, StageInput, catalog.ErrInvalidInput, RuleInvalidInput, "", true},
		{"relay is not a valve", "ok", ref(catalog.ToolSetValve), `{"valve": "relay", "open": true}`, nil, StageInput, catalog.ErrInvalidInput, RuleInvalidInput, "/valve", true},
		{"setpoint above the envelope", "ok", ref(catalog.ToolSetSetpoint), `{"setpoint": 1000.5, "unit": "celsius"}`, nil, StageExecute, ErrViolation, RuleMax, "", true},
		{"heater at atmosphere", "ok", ref(catalog.ToolSetHeater), `{"on": true}`, func(p *plant) { p.pressure.Pressure = device.Atmosphere }, StageExecute, ErrViolation, RuleHeater, "", true},
		{"H2S with the door open", "ok", ref(catalog.ToolSetFlow), `{"gas": "H2S", "flow": 5, "unit": "sccm"}`, func(p *plant) { p.inputs["door_closed"] = false }, StageExecute, ErrViolation, RuleGasInput, "", true},
		{"H2S valve with the scrubber off", "ok", ref(catalog.ToolSetValve), `{"valve": "h2s_valve", "open": true}`, func(p *plant) { p.switches["scrubber"] = false }, StageExecute, ErrViolation, RuleGasSwitch, "", true},
		{"vent while hot", "ok", ref(catalog.ToolVent), `{"open": true}`, func(p *plant) { p.furnace.ProcessValue = device.Celsius(300) }, StageExecute, ErrViolation, RuleVentHot, "", true},
		{"acquire beyond the envelope", "ok", ref(catalog.ToolAcquire), `{"integration_ms": 40000}`, nil, StageExecute, ErrViolation, RuleMax, "", true},
		{"Ar flow beyond the envelope in slm", "ok", ref(catalog.ToolSetFlow), `{"gas": "Ar", "flow": 0.51, "unit": "slm"}`, nil, StageExecute, ErrViolation, RuleMax, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newInvokeFixture(t, nil, nil)
			if tt.setup != nil {
				tt.setup(f.p)
			}
			out, err := f.iv.Invoke(context.Background(), tt.token, tt.ref, json.RawMessage(tt.input))
			var ie *InvokeError
			if !errors.As(err, &ie) || out != nil {
				t.Fatalf("want an *InvokeError, got %v (%s)", err, out)
			}
			if ie.Stage != tt.stage || !errors.Is(err, tt.is) || !ie.Refused() {
				t.Fatalf("stage %q, refused %v, want %q and %v: %v", ie.Stage, ie.Refused(), tt.stage, tt.is, err)
			}
			if tt.is == ErrViolation {
				var v *Violation
				if !errors.As(err, &v) || v.Rule != tt.rule {
					t.Fatalf("want a *Violation of %s: %v", tt.rule, err)
				}
			}
			if tt.path != "" {
				var ve *jsonschema.ValidationError
				if !errors.As(err, &ve) || !strings.Contains(fmt.Sprintf("%#v", ve.Causes)+err.Error(), strings.TrimPrefix(tt.path, "/")) {
					t.Fatalf("want a schema error at %s: %v", tt.path, err)
				}
			}
			if n := f.p.writeCount(); n != 0 {
				t.Fatalf("a refused invocation reached an instrument: %+v", f.p.writes)
			}
			if tt.stage != StageLookup {
				e := f.audit.last()
				if e.Decision != DecisionRefused || e.Rule != tt.rule {
					t.Fatalf("audit %+v, want a refusal under %q", f.audit.entries, tt.rule)
				}
			}
			s := f.iv.Stat(ie.Tool)
			if tt.stated && (s.Calls != 1 || s.Refused != 1) || !tt.stated && s.Calls != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestInvokeRateLimit(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	ctx := context.Background()
	vent := ref(catalog.ToolVent) // 10 calls per minute
	open := json.RawMessage(`{"open": true}`)
	for i := range 10 {
		if _, err := f.iv.Invoke(ctx, "ok", vent, open); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		f.p.advance(time.Second)
	}
	writes := f.p.writeCount()
	_, err := f.iv.Invoke(ctx, "ok", vent, open)
	var ie *InvokeError
	if !errors.Is(err, ErrRateLimited) || !errors.As(err, &ie) || ie.Stage != StageRateLimit || f.p.writeCount() != writes {
		t.Fatalf("11th call in a minute: %v", err)
	}
	if e := f.audit.last(); e.Rule != RuleRateLimit || e.Decision != DecisionRefused || e.Action == nil || e.Action.Channel() != "switch.vent_valve" {
		t.Fatalf("audit %+v", e)
	}
	// Another tool has its own budget.
	if _, err := f.iv.Invoke(ctx, "ok", ref(catalog.ToolSetPump), json.RawMessage(`{"on": true}`)); err != nil {
		t.Fatal(err)
	}
	f.p.advance(51 * time.Second) // the first call leaves the window
	if _, err := f.iv.Invoke(ctx, "ok", vent, open); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	s := f.iv.Stat(vent)
	if s.Calls != 12 || s.Succeeded != 11 || s.Refused != 1 || s.RefusedBy[RuleRateLimit] != 1 || len(s.RefusedBy) != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestInvokeRateLimitTowardSafe: a call toward the safe state is never
// refused for rate, however many calls the window holds, but it is counted
// (TowardSafe, and in the window, so it delays the next unsafe call).
func TestInvokeRateLimitTowardSafe(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	ctx := context.Background()
	vent := ref(catalog.ToolVent) // 10 calls per minute
	for i := range 25 {           // 2.5 times the limit, within 25 s
		if _, err := f.iv.Invoke(ctx, "ok", vent, json.RawMessage(`{"open": false}`)); err != nil {
			t.Fatalf("safe call %d refused: %v", i, err)
		}
		f.p.advance(time.Second)
	}
	// Through Act too: closing the vent valve is the same tool call.
	if _, err := f.iv.Act(ctx, "ok", SwitchAction("vent_valve", false)); err != nil {
		t.Fatalf("safe action refused: %v", err)
	}
	// The window is full of safe calls: an unsafe one is refused for rate.
	_, err := f.iv.Invoke(ctx, "ok", vent, json.RawMessage(`{"open": true}`))
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("unsafe call after a burst of safe ones: %v", err)
	}
	s := f.iv.Stat(vent)
	if s.Calls != 27 || s.Succeeded != 26 || s.TowardSafe != 26 || s.Refused != 1 || s.RefusedBy[RuleRateLimit] != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// blockingFurnace hangs on every write until its context ends.
type blockingFurnace struct{ fakeFurnace }

func (b blockingFurnace) SetSetpoint(ctx context.Context, _ device.Temperature) error {
	<-ctx.Done()
	return fmt.Errorf("furnace: %w: %w", device.ErrTimeout, ctx.Err())
}

// setpointWithTimeout is a registry holding only furnace.set_setpoint
// 1.0.1, the built-in tool with a 50 ms timeout.
func setpointWithTimeout(t *testing.T) *catalog.Registry {
	t.Helper()
	builtin, err := catalog.Builtin(SimRigSpec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	tool, err := builtin.Describe(catalog.ToolSetSetpoint, catalog.BuiltinVersion)
	if err != nil {
		t.Fatal(err)
	}
	reg := catalog.NewRegistry()
	tool.Version, tool.ID = "1.0.1", "6b1f0c3e-5a0e-4c1d-9a11-0000000000ff"
	tool.Performance = catalog.Performance{TypicalLatency: time.Millisecond, Timeout: 50 * time.Millisecond}
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestInvokeTimeout(t *testing.T) {
	reg := setpointWithTimeout(t)
	f := newInvokeFixture(t, reg, func(r *Rig) { r.Furnace = blockingFurnace{r.Furnace.(fakeFurnace)} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // hang guard
	defer cancel()
	_, err := f.iv.Invoke(ctx, "ok", ToolRef{Name: catalog.ToolSetSetpoint}, json.RawMessage(`{"setpoint": 100, "unit": "celsius"}`))
	var ie *InvokeError
	if !errors.As(err, &ie) || ie.Stage != StageExecute || ie.Refused() || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout while executing, got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the tool's timeout did not bound the call")
	}
	if s := f.iv.Stat(ToolRef{Name: catalog.ToolSetSetpoint, Version: "1.0.1"}); s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
	if e := f.audit.last(); e.Decision != DecisionFailed {
		t.Fatalf("audit %+v", e)
	}
}

// hangingStatus and hangingGauge answer no read until its context ends:
// the readings a setpoint's check needs never come within the call's time.
type (
	hangingStatus struct{ fakeFurnace }
	hangingGauge  struct{ fakeGauge }
)

func (h hangingStatus) Status(ctx context.Context) (device.FurnaceStatus, error) {
	<-ctx.Done()
	return device.FurnaceStatus{}, fmt.Errorf("furnace: %w: %w", device.ErrTimeout, ctx.Err())
}

func (h hangingGauge) ReadPressure(ctx context.Context) (device.PressureReading, error) {
	<-ctx.Done()
	return device.PressureReading{}, fmt.Errorf("gauge: %w: %w", device.ErrTimeout, ctx.Err())
}

// TestInvokeTimeoutBeforeAFreshReading: when a tool's own timeout ends
// while the interlock still waits for a fresh reading (a loaded host, a
// slow instrument), the call fails with the deadline, audited as failed,
// and is not reported as a stale_reading refusal: nothing was judged
// unsafe, and nothing was written. (Under make test-under-load
// TestInvokeTimeout met this case by chance.)
func TestInvokeTimeoutBeforeAFreshReading(t *testing.T) {
	reg := setpointWithTimeout(t)
	f := newInvokeFixture(t, reg, func(r *Rig) {
		r.Furnace, r.Gauge = hangingStatus{r.Furnace.(fakeFurnace)}, hangingGauge{r.Gauge.(fakeGauge)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // hang guard
	defer cancel()
	_, err := f.iv.Invoke(ctx, "ok", ToolRef{Name: catalog.ToolSetSetpoint}, json.RawMessage(`{"setpoint": 100, "unit": "celsius"}`))
	var ie *InvokeError
	if !errors.As(err, &ie) || ie.Refused() || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrViolation) {
		t.Fatalf("want the tool's timeout, not a refusal, got %v", err)
	}
	if !strings.Contains(err.Error(), "stale_reading") && !strings.Contains(err.Error(), "no fresh") {
		t.Errorf("the error does not say which reading was missing: %v", err)
	}
	var ended *FreshWaitEnded
	if !errors.As(err, &ended) || ended.Stale == nil || ended.Stale.Rule != RuleStale {
		t.Fatalf("want a FreshWaitEnded naming the stale verdict, got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the tool's timeout did not bound the call")
	}
	if e := f.audit.last(); e.Decision != DecisionFailed || e.Action == nil || e.Action.Channel() != ChannelSetpoint {
		t.Fatalf("audit %+v", e)
	}
	if got := f.p.furnace.Setpoint; got == 100 {
		t.Fatalf("the setpoint was written: %v", got)
	}
}

func TestInvokeSnapshot(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	ctx := context.Background()
	for _, token := range []string{"ok", "reader"} {
		out, err := f.iv.Invoke(ctx, token, ref(catalog.ToolSnapshot), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Furnace struct {
				Temperature float64 `json:"temperature_c"`
			} `json:"furnace"`
			Pressure struct {
				Pascal float64 `json:"pascal"`
			} `json:"pressure"`
			Switches map[string]bool `json:"switches"`
			Inputs   map[string]bool `json:"inputs"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if !closeTo(got.Furnace.Temperature, 25) || !closeTo(got.Pressure.Pascal, 50) || !got.Switches["scrubber"] ||
			!got.Inputs["door_closed"] || len(got.Switches) != 8 {
			t.Fatalf("snapshot %s", out)
		}
	}
	if f.p.writeCount() != 0 {
		t.Fatal("a snapshot wrote")
	}

	tests := []struct {
		name  string
		setup func(*plant)
		is    error
	}{
		{"silent gauge", func(p *plant) { p.fail["gauge"] = true }, ErrIncomplete},
		{"thermocouple open", func(p *plant) { p.furnace.Alarms = device.AlarmSensorBreak }, device.ErrSensor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newInvokeFixture(t, nil, nil)
			tt.setup(f.p)
			_, err := f.iv.Invoke(ctx, "reader", ref(catalog.ToolSnapshot), json.RawMessage(`{}`))
			if !errors.Is(err, tt.is) {
				t.Fatalf("want %v, got %v", tt.is, err)
			}
			if s := f.iv.Stat(ref(catalog.ToolSnapshot)); s.Failed != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestInvokeWhileLatched(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	ctx := context.Background()
	if err := f.il.SafeState(ctx, "test e-stop"); err != nil {
		t.Fatal(err)
	}
	halts := len(f.p.halts)
	_, err := f.iv.Invoke(ctx, "ok", ref(catalog.ToolSetHeater), json.RawMessage(`{"on": true}`))
	var v *Violation
	if !errors.As(err, &v) || v.Rule != RuleLatched {
		t.Fatalf("want a latched refusal, got %v", err)
	}
	// Safe outputs still pass.
	if _, err := f.iv.Invoke(ctx, "ok", ref(catalog.ToolSetHeater), json.RawMessage(`{"on": false}`)); err != nil {
		t.Fatal(err)
	}
	if len(f.p.halts) != halts || f.p.writeCount() != 1 || f.p.writes[0].value != 0 {
		t.Fatalf("writes %+v", f.p.writes)
	}
}

func TestInvokeStatsOrdered(t *testing.T) {
	f := newInvokeFixture(t, nil, nil)
	ctx := context.Background()
	calls := []struct{ tool, input string }{
		{catalog.ToolSetPump, `{"on": true}`},
		{catalog.ToolSetHeater, `{"on": true}`},
		{catalog.ToolSetHeater, `{"on": "yes"}`},
		{catalog.ToolSetPump, `{"on": false}`},
	}
	for _, c := range calls {
		_, _ = f.iv.Invoke(ctx, "ok", ref(c.tool), json.RawMessage(c.input))
	}
	stats := f.iv.Stats()
	names := []string{}
	for _, s := range stats {
		names = append(names, s.Tool.Name)
	}
	if !slices.Equal(names, []string{catalog.ToolSetHeater, catalog.ToolSetPump}) {
		t.Fatalf("stats order %v", names)
	}
	if h := stats[0]; h.Calls != 2 || h.Succeeded != 1 || h.Refused != 1 {
		t.Fatalf("heater stats %+v", h)
	}
	if p := stats[1]; p.Calls != 2 || p.Succeeded != 2 || p.MeanLatency() < 0 {
		t.Fatalf("pump stats %+v", p)
	}
}

func TestNewInvokerNeedsToolAuthorizer(t *testing.T) {
	f := newFixture(t) // plain Authorizer
	reg, err := catalog.Builtin(SimRigSpec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewInvoker(f.il, reg, InvokerOpts{}); err == nil {
		t.Fatal("an authorizer without tool permissions was accepted")
	}
	if _, err := NewInvoker(nil, reg, InvokerOpts{}); err == nil {
		t.Fatal("nil interlock accepted")
	}
}

// TestInvokeTowardSafeNeedsNoPermission: a token holding only rig.read is
// refused the tools that open (a flow above zero, a valve opened, the heater
// on) but may zero a flow, close a valve and turn the heater off; the
// interlock judges which is which from the rig spec, and every call is
// audited (the safe ones as toward_safe).
func TestInvokeTowardSafeNeedsNoPermission(t *testing.T) {
	tests := []struct {
		name  string
		tool  string
		input string
		ok    bool
	}{
		{"H2S flow above zero", catalog.ToolSetFlow, `{"gas": "H2S", "flow": 2, "unit": "sccm"}`, false},
		{"open the H2 valve", catalog.ToolSetValve, `{"valve": "h2_valve", "open": true}`, false},
		{"heater on", catalog.ToolSetHeater, `{"on": true}`, false},
		{"H2S flow to zero", catalog.ToolSetFlow, `{"gas": "H2S", "flow": 0, "unit": "sccm"}`, true},
		{"close the H2S valve", catalog.ToolSetValve, `{"valve": "h2s_valve", "open": false}`, true},
		{"heater off", catalog.ToolSetHeater, `{"on": false}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newInvokeFixture(t, nil, nil)
			_, err := f.iv.Invoke(context.Background(), "reader", ref(tt.tool), json.RawMessage(tt.input))
			e := f.audit.last()
			if !tt.ok {
				var ie *InvokeError
				if !errors.As(err, &ie) || ie.Stage != StagePermission || !errors.Is(err, ErrUnauthorized) || f.p.writeCount() != 0 {
					t.Fatalf("err %v, %d writes; want a permission refusal and none", err, f.p.writeCount())
				}
				if e.Decision != DecisionRefused || e.Rule != RulePermission || e.TowardSafe {
					t.Fatalf("audit %+v", e)
				}
				return
			}
			if err != nil || f.p.writeCount() != 1 {
				t.Fatalf("err %v, %d writes; want one", err, f.p.writeCount())
			}
			if e.Decision != DecisionExecuted || !e.TowardSafe || e.SessionID != "s-1" {
				t.Fatalf("audit %+v", e)
			}
		})
	}
}
