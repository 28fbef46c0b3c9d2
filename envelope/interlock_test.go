package envelope

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
)

type fixture struct {
	il    *Interlock
	p     *plant
	audit *auditLog
	sw    map[string]*fakeSwitch
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	p := newPlant(t0)
	rig, sws := fakeRig(p)
	audit := &auditLog{}
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	il, err := NewInterlock(testEnvelope(t), rig, tokens{}, audit, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{il: il, p: p, audit: audit, sw: sws}
}

func TestNewInterlockChecksRig(t *testing.T) {
	env := testEnvelope(t)
	tests := []struct {
		name   string
		mutate func(*Rig, *plant)
		path   string
	}{
		{"missing furnace", func(r *Rig, _ *plant) { r.Furnace = nil }, "rig.furnace"},
		{"missing MFC", func(r *Rig, _ *plant) { delete(r.Flows, "H2S") }, "rig.flows.H2S"},
		{"wrong full scale", func(r *Rig, p *plant) { r.Flows["H2S"] = fakeFlow{p: p, gas: "H2S", fs: 100} }, "rig.flows.H2S"},
		{"wrong safe state", func(r *Rig, p *plant) { r.Switches["scrubber"] = &fakeSwitch{p: p, name: "scrubber"} }, "rig.switches.scrubber"},
		{"extra switch", func(r *Rig, p *plant) { r.Switches["fan"] = &fakeSwitch{p: p, name: "fan"} }, "rig.switches"},
		{"missing input", func(r *Rig, _ *plant) { delete(r.Inputs, "estop_pressed") }, "rig.inputs.estop_pressed"},
		{"missing spectrometer", func(r *Rig, _ *plant) { r.Spectrometer = nil }, "rig.spectrometer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlant(t0)
			rig, _ := fakeRig(p)
			tt.mutate(&rig, p)
			_, err := NewInterlock(env, rig, tokens{}, &auditLog{}, InterlockOpts{})
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("want an error at %s, got %v", tt.path, err)
			}
		})
	}
	if _, err := NewInterlock(env, Rig{}, nil, &auditLog{}, InterlockOpts{}); err == nil {
		t.Fatal("no authorizer accepted")
	}
}

func TestApplyExecutesReadsBackAndAudits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.il.apply(ctx, "ok", HeaterAction(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.ReadBack != 1 || !res.At.Equal(t0) {
		t.Fatalf("result %+v", res)
	}
	res, err = f.il.apply(ctx, "ok", SetpointAction(device.Celsius(700)))
	if err != nil || !closeTo(res.ReadBack, 973.15) {
		t.Fatalf("setpoint: %+v %v", res, err)
	}
	res, err = f.il.apply(ctx, "ok", AcquireAction(time.Second))
	if err != nil || res.Spectrum == nil || res.Spectrum.Integration != time.Second {
		t.Fatalf("acquire: %+v %v", res, err)
	}
	if f.p.writeCount() != 3 {
		t.Fatalf("%d writes", f.p.writeCount())
	}
	var decisions []Decision
	for _, e := range f.audit.entries {
		decisions = append(decisions, e.Decision)
		if e.SessionID != "s-1" || e.Action == nil {
			t.Fatalf("entry %+v lacks session or action", e)
		}
	}
	want := []Decision{DecisionAccepted, DecisionExecuted, DecisionAccepted, DecisionExecuted, DecisionAccepted, DecisionExecuted}
	if !slices.Equal(decisions, want) {
		t.Fatalf("audit %v", decisions)
	}
}

func TestApplyRefusalNeverReachesDevice(t *testing.T) {
	tests := []struct {
		name   string
		token  string
		action Action
		setup  func(*plant)
		want   error
		rule   Rule
	}{
		{"bad token", "stolen", HeaterAction(true), nil, ErrUnauthorized, ""},
		{"bad token, even for a safe action", "", HeaterAction(false), nil, ErrUnauthorized, ""},
		{"setpoint beyond max", "ok", SetpointAction(device.Celsius(1100)), nil, ErrViolation, RuleMax},
		{"heater at atmosphere", "ok", HeaterAction(true), func(p *plant) { p.pressure.Pressure = device.Atmosphere }, ErrViolation, RuleHeater},
		{"H2S with the door open", "ok", FlowAction("H2S", 5), func(p *plant) { p.inputs["door_closed"] = false }, ErrViolation, RuleGasInput},
		{"H2S with the gauge silent", "ok", FlowAction("H2S", 5), func(p *plant) { p.fail["gauge"] = true }, ErrViolation, RuleStale},
		{"relay", "ok", SwitchAction("relay", true), nil, ErrViolation, RuleInterlockOwned},
		{"vent while hot", "ok", SwitchAction("vent_valve", true), func(p *plant) { p.furnace.ProcessValue = device.Celsius(300) }, ErrViolation, RuleVentHot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f.p)
			}
			_, err := f.il.apply(context.Background(), tt.token, tt.action)
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
			if tt.want == ErrUnauthorized && !errors.Is(err, errBadToken) {
				t.Fatalf("the authorizer's reason is lost: %v", err)
			}
			if n := f.p.writeCount(); n != 0 {
				t.Fatalf("a refused action reached the device: %+v", f.p.writes)
			}
			e := f.audit.last()
			if f.audit.count() != 1 || e.Decision != DecisionRefused || e.Rule != tt.rule || e.Action == nil || *e.Action != tt.action {
				t.Fatalf("audit %+v", f.audit.entries)
			}
		})
	}
}

func TestApplyReadbackMismatch(t *testing.T) {
	f := newFixture(t)
	f.sw["pump"].stuck = true
	_, err := f.il.apply(context.Background(), "ok", SwitchAction("pump", true))
	if !errors.Is(err, device.ErrReadback) {
		t.Fatalf("want ErrReadback, got %v", err)
	}
	if e := f.audit.last(); e.Decision != DecisionFailed {
		t.Fatalf("audit %+v", e)
	}
	// A failed write is not accepted history.
	if _, _, ok := f.il.state.Last(SwitchChannel("pump")); ok {
		t.Fatal("a failed write entered the history")
	}
}

func TestApplyWithoutAuditDoesNotWrite(t *testing.T) {
	f := newFixture(t)
	f.audit.fail = true
	_, err := f.il.apply(context.Background(), "ok", HeaterAction(true))
	if !errors.Is(err, ErrAudit) || f.p.writeCount() != 0 {
		t.Fatalf("err %v, writes %d", err, f.p.writeCount())
	}
	_, err = f.il.apply(context.Background(), "ok", HeaterAction(true))
	if !errors.Is(err, ErrAudit) {
		t.Fatal(err)
	}
	f.p.pressure.Pressure = device.Atmosphere
	_, err = f.il.apply(context.Background(), "ok", HeaterAction(true))
	if !errors.Is(err, ErrViolation) || !errors.Is(err, ErrAudit) {
		t.Fatalf("a refusal that cannot be audited must say both: %v", err)
	}
}

func TestApplyRateHistory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.il.apply(ctx, "ok", FlowAction("H2S", 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.il.apply(ctx, "ok", FlowAction("H2S", 20)); !errors.Is(err, ErrViolation) {
		t.Fatalf("a step of 10 sccm at once: %v", err)
	}
	f.p.advance(10 * time.Second)
	if _, err := f.il.apply(ctx, "ok", FlowAction("H2S", 20)); err != nil {
		t.Fatalf("10 sccm after 10 s at 60 sccm/min: %v", err)
	}
}

// TestSafeStateThen: then runs once every instrument has halted, the audit
// entry of the halts is written as well, and SafeStateThen returns after
// both.
func TestSafeStateThen(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.il.apply(ctx, "ok", HeaterAction(true)); err != nil {
		t.Fatal(err)
	}
	var halted, heaterOn, ran bool
	if err := f.il.SafeStateThen(ctx, "operator e-stop", func() {
		halted, heaterOn, ran = len(f.p.halts) == len(f.il.instr), f.p.furnace.HeaterEnabled, true
	}); err != nil {
		t.Fatal(err)
	}
	if !ran || !halted || heaterOn {
		t.Fatalf("then: ran %v, every instrument halted before it %v, heater on %v", ran, halted, heaterOn)
	}
	if e := f.audit.last(); e.Decision != DecisionHalted || e.Reason != "operator e-stop" {
		t.Fatalf("audit %+v", e)
	}
	if latched, _ := f.il.View().Latched(); !latched {
		t.Fatal("not latched")
	}
}

func TestSafeStateLatchesUntilReset(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.il.apply(ctx, "ok", HeaterAction(true)); err != nil {
		t.Fatal(err)
	}
	if err := f.il.SafeState(ctx, "operator e-stop"); err != nil {
		t.Fatal(err)
	}
	if f.p.furnace.HeaterEnabled || !f.p.switches["scrubber"] || f.p.switches["relay"] {
		t.Fatalf("not safe: %+v", f.p.plantState)
	}
	if len(f.p.halts) != len(f.il.instr) {
		t.Fatalf("halted %v", f.p.halts)
	}
	if e := f.audit.last(); e.Decision != DecisionHalted || e.SessionID != "" {
		t.Fatalf("audit %+v", e)
	}
	latched, why := f.il.View().Latched()
	if !latched || why != "operator e-stop" {
		t.Fatalf("latched %v %q", latched, why)
	}
	before := f.p.writeCount()
	_, err := f.il.apply(ctx, "ok", HeaterAction(true))
	var v *Violation
	if !errors.As(err, &v) || v.Rule != RuleLatched || f.p.writeCount() != before {
		t.Fatalf("latched Apply: %v", err)
	}
	if _, err := f.il.apply(ctx, "ok", SwitchAction("h2s_valve", false)); err != nil {
		t.Fatalf("a safe action while latched: %v", err)
	}
	if err := f.il.Reset(ctx, ""); err == nil {
		t.Fatal("anonymous reset accepted")
	}
	if err := f.il.Reset(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if e := f.audit.last(); e.Decision != DecisionReset || e.Operator != "alice" {
		t.Fatalf("audit %+v", e)
	}
	if _, err := f.il.apply(ctx, "ok", HeaterAction(true)); err != nil {
		t.Fatalf("after reset: %v", err)
	}
}

func TestTripProcedures(t *testing.T) {
	tests := []struct {
		trip   Trip
		halted []string
	}{
		{TripOverTemperature, []string{"furnace", "mfc-Ar", "mfc-H2", "mfc-H2S", "ar_valve", "h2_valve", "h2s_valve", "relay"}},
		{TripGasLeak, []string{"mfc-Ar", "mfc-H2", "mfc-H2S", "ar_valve", "h2_valve", "h2s_valve"}},
		{TripCommsLoss, nil}, // everything
	}
	for _, tt := range tests {
		t.Run(string(tt.trip), func(t *testing.T) {
			f := newFixture(t)
			err := f.il.Trip(context.Background(), TripEvent{Trip: tt.trip, Channel: "x", Reason: "test"})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(slices.Values(f.p.halts))
			want := slices.Sorted(slices.Values(tt.halted))
			if tt.halted == nil {
				want = nil
				for _, n := range f.il.instr {
					want = append(want, n.inst.String())
				}
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("halted %v, want %v", got, want)
			}
			e := f.audit.last()
			if e.Decision != DecisionTripped || e.Trip != tt.trip || e.Rule != Rule(f.il.Envelope().Procedure(tt.trip)) {
				t.Fatalf("audit %+v", e)
			}
			if latched, _ := f.il.Latched(); !latched {
				t.Fatal("not latched")
			}
		})
	}
}

func TestArm(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.p.inputs["estop_pressed"] = true
	if err := f.il.Arm(ctx, "alice"); !errors.Is(err, ErrViolation) || f.p.switches["relay"] {
		t.Fatalf("armed with the e-stop pressed: %v", err)
	}
	f.p.inputs["estop_pressed"] = false
	if err := f.il.Arm(ctx, "alice"); err != nil || !f.p.switches["relay"] {
		t.Fatalf("arm: %v", err)
	}
	if e := f.audit.last(); e.Decision != DecisionArmed || e.Operator != "alice" {
		t.Fatalf("audit %+v", e)
	}
	_ = f.il.SafeState(ctx, "test")
	if err := f.il.Arm(ctx, "alice"); !errors.Is(err, ErrViolation) {
		t.Fatalf("armed while latched: %v", err)
	}
}

func TestView(t *testing.T) {
	f := newFixture(t)
	v := f.il.View()
	ctx := context.Background()
	r := v.Readings(ctx)
	if !r.At.Equal(t0) || r.Pressure.At.IsZero() || len(r.Flows) != 3 || len(r.Switches) != 8 || len(r.Inputs) != 6 {
		t.Fatalf("readings %+v", r)
	}
	if err := v.DryRun(ctx, SetpointAction(device.Celsius(1100))); !errors.Is(err, ErrViolation) {
		t.Fatalf("dry run: %v", err)
	}
	if err := v.DryRun(ctx, SetpointAction(device.Celsius(500))); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if f.p.writeCount() != 0 || f.audit.count() != 0 {
		t.Fatal("a view wrote or audited")
	}
	spec := v.Envelope().Spec()
	spec.Gases[0].FullScale = 1e9
	if v.Envelope().Spec().Gases[0].FullScale == 1e9 {
		t.Fatal("the spec is mutable through the view")
	}
}

// blockingSwitch blocks in Set until its context ends, like a hung bus.
type blockingSwitch struct {
	*fakeSwitch
	entered chan struct{}
}

func (b *blockingSwitch) Set(ctx context.Context, on bool) error {
	close(b.entered)
	<-ctx.Done()
	// The late write lands anyway, as on a bus that delivered it.
	_ = b.fakeSwitch.p.halt("late-write", func() { b.fakeSwitch.p.switches[b.name] = on })
	return ctx.Err()
}

func TestSafeStateDuringApply(t *testing.T) {
	p := newPlant(t0)
	rig, sws := fakeRig(p)
	bs := &blockingSwitch{fakeSwitch: sws["pump"], entered: make(chan struct{})}
	rig.Switches["pump"] = bs
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	opts.WriteTimeout = time.Minute // only SafeState can end the write
	il, err := NewInterlock(testEnvelope(t), rig, tokens{}, &auditLog{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := il.apply(context.Background(), "ok", SwitchAction("pump", true))
		errc <- err
	}()
	<-bs.entered
	if err := il.SafeState(context.Background(), "e-stop"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the cancelled Apply reported success")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Apply did not return after SafeState")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.switches["pump"] {
		t.Fatal("the late write outlived the e-stop")
	}
}

// TestPropertyNothingOutsideTheEnvelopeReachesTheRig drives random actions
// under random plant states and checks every write that reached a fake
// instrument against an oracle written from testdata/envelope.yaml, not from
// the envelope's code.
func TestPropertyNothingOutsideTheEnvelopeReachesTheRig(t *testing.T) {
	iterations := 4000
	if testing.Short() {
		iterations = 500
	}
	rng := rand.New(rand.NewPCG(1, 2))
	f := newFixture(t)
	ctx := context.Background()
	gases := []string{"Ar", "H2", "H2S"}
	switches := []string{"pump", "gate_valve", "ar_valve", "h2_valve", "h2s_valve", "vent_valve", "scrubber", "relay"}
	var accepted, refused int
	lastH2S := struct {
		v  float64
		at time.Time
		ok bool
	}{}
	latched := false

	for i := range iterations {
		f.p.advance(time.Duration(rng.IntN(20000)) * time.Millisecond)
		f.p.mu.Lock()
		if rng.IntN(3) == 0 {
			f.p.pressure = device.PressureReading{Pressure: device.Pressure(1e-2 * mathPow10(rng.Float64()*7.1)), Status: device.GaugeStatus(rng.IntN(4))}
		}
		if rng.IntN(3) == 0 {
			f.p.furnace.ProcessValue = device.Celsius(20 + rng.Float64()*1100)
			f.p.furnace.HeaterEnabled = rng.IntN(2) == 0
			f.p.furnace.Alarms = 0
			if rng.IntN(20) == 0 {
				f.p.furnace.Alarms = device.AlarmSensorBreak
			}
		}
		for _, g := range gases {
			if rng.IntN(4) == 0 {
				st := f.p.flows[g]
				st.Flow = device.Flow(rng.Float64() * 60 * float64(rng.IntN(2)))
				f.p.flows[g] = st
			}
		}
		for _, s := range switches {
			if rng.IntN(6) == 0 {
				f.p.switches[s] = rng.IntN(2) == 0
			}
		}
		for _, in := range SimRigSpec().Inputs {
			if rng.IntN(6) == 0 {
				f.p.inputs[in] = rng.IntN(4) != 0
			}
		}
		clear(f.p.fail)
		if rng.IntN(10) == 0 {
			f.p.fail[[]string{"furnace", "gauge", "mfc-H2", "scrubber", "door_closed"}[rng.IntN(5)]] = true
		}
		f.p.mu.Unlock()

		switch rng.IntN(60) {
		case 0:
			_ = f.il.SafeState(ctx, "random e-stop")
			latched = true
			continue
		case 1:
			_ = f.il.Reset(ctx, "bob")
			latched = false
			continue
		}

		var a Action
		switch rng.IntN(6) {
		case 0:
			a = SetpointAction(device.Celsius(-50 + rng.Float64()*1300))
		case 1:
			a = RampRateAction(device.TemperatureRate(rng.Float64() * 30))
		case 2:
			a = HeaterAction(rng.IntN(2) == 0)
		case 3:
			a = FlowAction(gases[rng.IntN(3)], device.Flow(rng.Float64()*600*float64(rng.IntN(2))))
		case 4:
			a = SwitchAction(switches[rng.IntN(len(switches))], rng.IntN(2) == 0)
		case 5:
			a = AcquireAction(time.Duration(rng.IntN(40000)) * time.Millisecond)
		}
		token := "ok"
		if rng.IntN(15) == 0 {
			token = "forged"
		}
		before := f.p.writeCount()
		_, err := f.il.apply(ctx, token, a)
		f.p.mu.Lock()
		writes := slices.Clone(f.p.writes[before:])
		f.p.mu.Unlock()
		if err != nil {
			refused++
			var v *Violation
			typed := errors.As(err, &v) || errors.Is(err, ErrUnauthorized) ||
				errors.Is(err, device.ErrTimeout) || errors.Is(err, device.ErrReadback) // the instrument failed
			if !typed {
				t.Fatalf("iteration %d: %v refused with an untyped error: %v", i, a, err)
			}
			if (errors.Is(err, ErrViolation) || errors.Is(err, ErrUnauthorized)) && len(writes) != 0 {
				t.Fatalf("iteration %d: refused %v reached the rig: %+v", i, a, writes)
			}
			if e := f.audit.last(); e.Decision != DecisionRefused && e.Decision != DecisionFailed {
				t.Fatalf("iteration %d: refusal not audited: %+v", i, e)
			}
			continue
		}
		accepted++
		if token != "ok" {
			t.Fatalf("iteration %d: a forged token passed", i)
		}
		for _, w := range writes {
			if msg := oracle(w, latched, lastH2S.ok, lastH2S.v, lastH2S.at); msg != "" {
				t.Fatalf("iteration %d: %v reached the rig although %s\nplant: %+v", i, a, msg, w.before)
			}
			if w.channel == FlowChannel("H2S") {
				lastH2S.v, lastH2S.at, lastH2S.ok = w.value, w.before.now, true
			}
		}
	}
	if accepted < iterations/20 || refused < iterations/20 {
		t.Fatalf("the random walk explored too little: %d accepted, %d refused", accepted, refused)
	}
	t.Logf("%d accepted, %d refused", accepted, refused)
}

func mathPow10(x float64) float64 {
	r := 1.0
	for x >= 1 {
		r *= 10
		x--
	}
	return r * (1 + 9*x) // monotone in x, spans the decades
}

// oracle restates testdata/envelope.yaml independently; it returns why a
// write must not have happened, or "".
func oracle(w write, latched bool, haveLast bool, last float64, lastAt time.Time) string {
	s := w.before
	pOK := s.pressure.Status <= device.GaugeOverrange
	p := float64(s.pressure.Pressure)
	inUse := func(g, valve string) bool { return float64(s.flows[g].Flow) >= 1 || s.switches[valve] }
	on := w.value == 1
	safe := map[string]bool{SwitchChannel("scrubber"): true}
	isSafe := (w.channel == ChannelHeater && !on) || (strings.HasPrefix(w.channel, "flow.") && w.value == 0) ||
		(strings.HasPrefix(w.channel, "switch.") && on == safe[w.channel])
	if isSafe {
		return ""
	}
	if latched {
		return "the interlock was latched"
	}
	celsius := func(k float64) float64 { return k - 273.15 }
	h2sOK := func() string {
		switch {
		case !pOK || p > 1000:
			return "H2S needs ≤ 10 mbar"
		case !s.switches["scrubber"] || !s.inputs["door_closed"] || !s.inputs["exhaust_ok"] || s.inputs["leak_detected"]:
			return "H2S needs scrubber, door, exhaust, no leak"
		case inUse("H2", "h2_valve"):
			return "H2 in use"
		}
		return ""
	}
	h2OK := func() string {
		switch {
		case !pOK || p > 10000:
			return "H2 needs ≤ 100 mbar"
		case !s.inputs["door_closed"] || s.inputs["leak_detected"]:
			return "H2 needs door, no leak"
		case inUse("H2S", "h2s_valve"):
			return "H2S in use"
		}
		return ""
	}
	heaterOK := (pOK && p <= 100) || float64(s.flows["Ar"].Flow) >= 50
	switch w.channel {
	case ChannelSetpoint:
		if c := celsius(w.value); c < -1e-9 || c > 1000+1e-9 {
			return "setpoint outside 0..1000 °C"
		}
		if s.furnace.HeaterEnabled && w.value > float64(s.furnace.Setpoint) && !heaterOK {
			return "raising the setpoint of a live heater without vacuum or Ar"
		}
	case ChannelRampRate:
		if w.value < 0.5 || w.value > 20 {
			return "ramp outside 0.5..20 °C/min"
		}
	case ChannelHeater:
		if !heaterOK {
			return "heater without vacuum or Ar"
		}
	case FlowChannel("Ar"):
		if w.value > 500 {
			return "Ar above 0.5 slm"
		}
	case FlowChannel("H2"):
		if w.value > 100 {
			return "H2 above 100 sccm"
		}
		return h2OK()
	case FlowChannel("H2S"):
		if w.value > 20 {
			return "H2S above 20 sccm"
		}
		if haveLast && (w.value-last) > 60*s.now.Sub(lastAt).Minutes()+1e-6 || haveLast && (last-w.value) > 60*s.now.Sub(lastAt).Minutes()+1e-6 {
			return "H2S changed faster than 60 sccm/min"
		}
		return h2sOK()
	case SwitchChannel("h2s_valve"):
		return h2sOK()
	case SwitchChannel("h2_valve"):
		return h2OK()
	case SwitchChannel("vent_valve"):
		switch {
		case s.furnace.Alarms&device.AlarmSensorBreak != 0 || celsius(float64(s.furnace.ProcessValue)) > 80 || s.furnace.HeaterEnabled:
			return "venting while hot"
		case inUse("H2", "h2_valve") || inUse("H2S", "h2s_valve"):
			return "venting with gas"
		case s.switches["gate_valve"]:
			return "venting while pumping"
		}
	case SwitchChannel("gate_valve"):
		if s.switches["vent_valve"] {
			return "pumping while venting"
		}
	case SwitchChannel("relay"):
		return "the relay belongs to the interlock"
	case ChannelIntegration:
		if w.value < 0.01 || w.value > 30 {
			return "integration outside 10 ms..30 s"
		}
	}
	return ""
}
