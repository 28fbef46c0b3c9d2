package envelope

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
)

// hotGasEnvelope is the test envelope with H2 held closed below 600 °C
// (min_temperature) and venting_without_purge in force, H2 no longer listed
// reactive: the vent rule follows the layout's hazard classes (H2
// flammable, H2S toxic), not the reactive list.
func hotGasEnvelope(t testing.TB) *Envelope {
	t.Helper()
	cfg := loadTestConfig(t)
	g := cfg.Interlocks.Gases["H2"]
	g.MinTemperature = &Quantity{Value: 600, Unit: "celsius"}
	cfg.Interlocks.Gases["H2"] = g
	cfg.ReactiveGases = []string{"H2S"}
	cfg.ProhibitedActions = append(cfg.ProhibitedActions, string(RuleVentPurge))
	env, err := Compile(cfg, SimRigSpec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// hot is the rig heating at 700 °C under vacuum.
func hot(r *Readings, _ *State) {
	r.Furnace.HeaterEnabled = true
	r.Furnace.ProcessValue, r.Furnace.Setpoint = device.Celsius(700), device.Celsius(700)
}

// TestGasMinTemperature: a gas with min_temperature is admitted (flow
// above zero, or its line valve opened) only with the heater enabled and
// both the setpoint and the process value at or above the limit; a stale
// furnace reading refuses; closing it is always allowed.
func TestGasMinTemperature(t *testing.T) {
	env := hotGasEnvelope(t)
	h2, valve := FlowAction("H2", 20), SwitchAction("h2_valve", true)
	runEnvChecks(t, env, []checkCase{
		{"hot", h2, hot, "", 0, 0, ""},
		{"line valve, hot", valve, hot, "", 0, 0, ""},
		{"at the limit", h2, func(r *Readings, s *State) {
			hot(r, s)
			r.Furnace.ProcessValue, r.Furnace.Setpoint = device.Celsius(600), device.Celsius(600)
		}, "", 0, 0, ""},
		{"cold furnace", h2, nil, RuleGasTemperature, 600, 0, ""},
		{"line valve, cold", valve, nil, RuleGasTemperature, 0, 0, ""},
		{"heater off while still hot", h2, func(r *Readings, s *State) { hot(r, s); r.Furnace.HeaterEnabled = false }, RuleGasTemperature, 600, 700, "celsius"},
		{"setpoint below (cooling)", h2, func(r *Readings, s *State) { hot(r, s); r.Furnace.Setpoint = device.Celsius(500) }, RuleGasTemperature, 600, 500, "celsius"},
		{"process value below (heating)", h2, func(r *Readings, s *State) { hot(r, s); r.Furnace.ProcessValue = device.Celsius(599) }, RuleGasTemperature, 600, 599, "celsius"},
		{"thermocouple open", h2, func(r *Readings, s *State) { hot(r, s); r.Furnace.Alarms = device.AlarmSensorBreak }, RuleStale, 0, 0, ""},
		{"stale furnace", h2, func(r *Readings, s *State) { hot(r, s); r.Furnace.At = t0.Add(-time.Minute) }, RuleStale, 0, 0, ""},
		{"closing, cold", FlowAction("H2", 0), nil, "", 0, 0, ""},
		{"Ar has no such rule", FlowAction("Ar", 100), nil, "", 0, 0, ""},
	})
	if got := strings.Join(env.rulesFor(FlowChannel("H2")), "; "); !strings.Contains(got, "furnace heating at ≥ 600 celsius") {
		t.Errorf("coverage of flow.H2: %s", got)
	}
}

// TestVentingWithoutPurge: under venting_without_purge the vent valve stays
// shut while a flammable, toxic or corrosive line (by the layout's hazard
// class) has been used since the last purge, reactive or not; a completed
// purge clears it; the gate valve and closing the vent are not concerned.
func TestVentingWithoutPurge(t *testing.T) {
	env := hotGasEnvelope(t)
	if got := strings.Join(env.tracked, ","); got != "H2,H2S" {
		t.Fatalf("tracked %s, want H2,H2S (H2 flammable though not listed reactive)", got)
	}
	vent := SwitchAction("vent_valve", true)
	// A history with a purge two hours ago, then g used an hour ago.
	used := func(g string) func(*Readings, *State) {
		return func(r *Readings, s *State) {
			s.lastPurge = r.At.Add(-2 * time.Hour)
			s.used[g] = r.At.Add(-time.Hour)
		}
	}
	purged := func(r *Readings, s *State) { s.lastPurge = r.At.Add(-2 * time.Hour) }
	runEnvChecks(t, env, []checkCase{
		{"nothing used since a purge", vent, purged, "", 0, 0, ""},
		{"no purge since the agent started", vent, nil, RuleVentPurge, 0, 0, ""},
		{"H2 (flammable) used", vent, used("H2"), RuleVentPurge, 0, 0, ""},
		{"H2S (toxic) used", vent, used("H2S"), RuleVentPurge, 0, 0, ""},
		{"Ar is inert", vent, used("Ar"), "", 0, 0, ""},
		{"closing the vent", SwitchAction("vent_valve", false), used("H2"), "", 0, 0, ""},
	})
	// A fresh history (the agent just started) knows no line's use: a
	// purge completes with nothing recorded, and then the vent may open.
	s0 := NewState()
	for i := range 3 {
		r := safeReadings(t0.Add(time.Duration(i) * time.Minute))
		setFlow(&r, "Ar", 100)
		env.Observe(s0, r)
	}
	if err := env.Check(vent, safeReadings(t0.Add(2*time.Minute)), s0); err != nil || s0.LastPurge().IsZero() {
		t.Fatalf("vent after the first purge since start: %v (last purge %v)", err, s0.LastPurge())
	}
	// Accept and Observe record the flammable line, and a purge clears it.
	s := NewState()
	env.Accept(s, FlowAction("H2", 10), t0)
	r := safeReadings(t0.Add(time.Second))
	if err := env.Check(vent, r, s); err == nil || !strings.Contains(err.Error(), "H2 (flammable) was in use") {
		t.Fatalf("vent after H2: %v", err)
	}
	for i := range 3 {
		r = safeReadings(t0.Add(time.Duration(i+1) * time.Minute))
		setFlow(&r, "Ar", 100)
		env.Observe(s, r)
	}
	if err := env.Check(vent, r, s); err != nil {
		t.Fatalf("vent after the purge: %v", err)
	}
	// The rule needs a purge definition.
	cfg := loadTestConfig(t)
	cfg.ProhibitedActions = []string{string(RuleVentPurge)}
	cfg.Purge = nil
	if _, err := Compile(cfg, SimRigSpec()); err == nil || !strings.Contains(err.Error(), "venting_without_purge needs a purge definition") {
		t.Fatalf("without a purge: %v", err)
	}
}

// TestCompileMinTemperature: a min_temperature outside the furnace's
// setpoint range, or above the setpoint's hard limit, is refused.
func TestCompileMinTemperature(t *testing.T) {
	for _, c := range []struct {
		q    Quantity
		want string
	}{
		{Quantity{Value: 1200, Unit: "celsius"}, "interlocks.gases.H2.min_temperature: 1200 celsius lies outside"},
		{Quantity{Value: 10, Unit: "mbar"}, "interlocks.gases.H2.min_temperature"},
		{Quantity{}, "interlocks.gases.H2.min_temperature: missing"},
	} {
		cfg := loadTestConfig(t)
		g := cfg.Interlocks.Gases["H2"]
		g.MinTemperature = &c.q
		cfg.Interlocks.Gases["H2"] = g
		if _, err := Compile(cfg, SimRigSpec()); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want %q, got %v", c.q, c.want, err)
		}
	}
}

// TestRatesOnProcessTime: a State for a rig running faster than the wall
// clock judges rates of change and the purge's duration on the rig's time
// (the same as the recipe check's): one wall second at scale 300 is five
// minutes of the rig.
func TestRatesOnProcessTime(t *testing.T) {
	env := testEnvelope(t) // flow.H2S: max_rate_per_minute 60
	for _, c := range []struct {
		scale float64
		rule  Rule
	}{{1, RuleRate}, {300, ""}} {
		s := NewScaledState(c.scale)
		env.Accept(s, FlowAction("H2S", 0), t0)
		r := safeReadings(t0.Add(10 * time.Second)) // 20 sccm in 10 s: 120 sccm/min at scale 1, 0.4 at 300
		setSwitch(&r, "scrubber", true)
		var got Rule
		if v := env.check(FlowAction("H2S", 20), r, s); v != nil {
			got = v.Rule
		}
		if got != c.rule {
			t.Errorf("scale %g: rule %q, want %q", c.scale, got, c.rule)
		}
	}
	// Ar at 100 sccm for 1 s of wall clock at scale 300 is a 5-min purge
	// (min_duration 2m); at scale 1 it is not.
	for _, c := range []struct {
		scale  float64
		purged bool
	}{{1, false}, {300, true}} {
		s := NewScaledState(c.scale)
		s.used["H2"] = t0
		for _, d := range []time.Duration{0, 500 * time.Millisecond, time.Second} {
			r := safeReadings(t0.Add(time.Second + d))
			setFlow(&r, "Ar", 100)
			r.Pressure.Pressure = device.Atmosphere
			env.Observe(s, r)
		}
		if got := len(s.UsedSincePurge()) == 0; got != c.purged {
			t.Errorf("scale %g: purged %v, want %v", c.scale, got, c.purged)
		}
	}
}

// TestInterlockRefusesColdGas: the interlock refuses H2 into a cold
// furnace with a typed *Violation, audits the refusal and writes nothing;
// once the furnace is hot the same action is executed.
func TestInterlockRefusesColdGas(t *testing.T) {
	p := newPlant(t0)
	rig, _ := fakeRig(p)
	audit := &auditLog{}
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	il, err := NewInterlock(hotGasEnvelope(t), rig, tokens{}, audit, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = il.apply(ctx, "ok", FlowAction("H2", 20))
	var v *Violation
	if !errors.As(err, &v) || v.Rule != RuleGasTemperature || !errors.Is(err, ErrViolation) {
		t.Fatalf("cold: %v", err)
	}
	if e := audit.last(); e.Decision != DecisionRefused || e.Rule != RuleGasTemperature {
		t.Fatalf("audit %+v", e)
	}
	if n := p.writeCount(); n != 0 {
		t.Fatalf("%d writes reached the rig", n)
	}
	p.mu.Lock()
	p.furnace.HeaterEnabled = true
	p.furnace.ProcessValue, p.furnace.Setpoint = device.Celsius(700), device.Celsius(700)
	p.mu.Unlock()
	if _, err := il.apply(ctx, "ok", FlowAction("H2", 20)); err != nil {
		t.Fatalf("hot: %v", err)
	}
}
