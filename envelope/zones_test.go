package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/device/rig"
)

// The rig of two heated zones in these tests: the simulated rig
// (SimRigSpec) whose furnace is the growth zone, with a sulfur zone
// upstream of it (configs/mos2-two-zone.yaml's shape).

var sulfurRange = FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(400),
	RampMax: device.KelvinPerMinute(50), ProcessValueMax: device.Celsius(500)}

func twoZoneSpec() RigSpec {
	s := SimRigSpec()
	s.Zones = []ZoneSpec{{Name: "sulfur", FurnaceSpec: sulfurRange}, {Name: "growth", FurnaceSpec: s.Furnace}}
	s.Furnace = sulfurRange
	return s
}

func f64(v float64) *float64 { return &v }

// twoZoneConfig is testdata/envelope.yaml with the furnace's limits given
// to the growth zone and the sulfur zone's own: setpoint ≤ 220 °C, trip at
// 240 °C.
func twoZoneConfig(t testing.TB) Config {
	cfg := loadTestConfig(t)
	for _, what := range []string{ZoneSetpoint, ZoneRampRate, ZoneTemperature} {
		cfg.Parameters[ZoneChannel("growth", what)] = cfg.Parameters[ZoneChannel(rig.FurnaceName, what)]
		delete(cfg.Parameters, ZoneChannel(rig.FurnaceName, what))
	}
	cfg.Parameters["sulfur.setpoint"] = Parameter{Min: f64(0), Max: f64(220), Unit: "celsius"}
	cfg.Parameters["sulfur.ramp_rate"] = Parameter{Min: f64(0.5), Max: f64(10), Unit: "celsius_per_minute"}
	cfg.Parameters["sulfur.temperature"] = Parameter{Max: f64(240), Unit: "celsius"}
	return cfg
}

func twoZoneEnvelope(t testing.TB) *Envelope {
	t.Helper()
	env, err := Compile(twoZoneConfig(t), twoZoneSpec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// fakeZone is a heated zone's controller over the plant: its status is
// zones[name] of the plant's zone table.
type fakeZone struct {
	p    *plant
	name string
	st   map[string]*device.FurnaceStatus
}

func (z fakeZone) String() string { return "tc-" + z.name }
func (z fakeZone) Halt(context.Context) error {
	return z.p.halt(z.String(), func() { z.st[z.name].HeaterEnabled = false })
}
func (z fakeZone) Status(ctx context.Context) (device.FurnaceStatus, error) {
	var st device.FurnaceStatus
	err := z.p.do(ctx, z.String(), "", 0, false, func() { st = *z.st[z.name]; st.At = z.p.now })
	return st, err
}
func (z fakeZone) SetSetpoint(ctx context.Context, t device.Temperature) error {
	return z.p.do(ctx, z.String(), ZoneChannel(z.name, ZoneSetpoint), float64(t), true, func() { z.st[z.name].Setpoint = t })
}
func (z fakeZone) SetRampRate(ctx context.Context, r device.TemperatureRate) error {
	return z.p.do(ctx, z.String(), ZoneChannel(z.name, ZoneRampRate), float64(r), true, func() { z.st[z.name].RampRate = r })
}
func (z fakeZone) SetHeater(ctx context.Context, on bool) error {
	return z.p.do(ctx, z.String(), ZoneChannel(z.name, ZoneHeater), boolValue(on), true, func() { z.st[z.name].HeaterEnabled = on })
}
func (z fakeZone) KickWatchdog(context.Context) error { return nil }

var _ device.TemperatureController = fakeZone{}

// twoZoneFixture is an interlock over the fake rig whose furnace is
// replaced by the two zones' controllers; zones holds their states (under
// the plant's lock).
type twoZoneFixture struct {
	*fixture
	zones map[string]*device.FurnaceStatus
}

func newTwoZoneFixture(t *testing.T, auth Authorizer) *twoZoneFixture {
	t.Helper()
	p := newPlant(t0)
	r, sws := fakeRig(p)
	zones := map[string]*device.FurnaceStatus{}
	for _, n := range []string{"sulfur", "growth"} {
		zones[n] = &device.FurnaceStatus{ProcessValue: device.Celsius(25), Setpoint: device.Celsius(25), RampRate: 5}
	}
	r.Furnace = fakeZone{p, "sulfur", zones}
	r.Zones = map[string]device.TemperatureController{"growth": fakeZone{p, "growth", zones}}
	audit := &auditLog{}
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	opts.ReadTimeout = 50 * time.Millisecond
	il, err := NewInterlock(twoZoneEnvelope(t), r, auth, audit, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &twoZoneFixture{fixture: &fixture{il: il, p: p, audit: audit, sw: sws}, zones: zones}
}

func (f *twoZoneFixture) set(fn func(*plant)) {
	f.p.mu.Lock()
	fn(f.p)
	f.p.mu.Unlock()
}

func (f *twoZoneFixture) zone(name string) device.FurnaceStatus {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	return *f.zones[name]
}

// TestNewInterlockNeedsEveryZone: a rig of two zones handed one
// controller is refused, naming the zone without its controller.
func TestNewInterlockNeedsEveryZone(t *testing.T) {
	p := newPlant(t0)
	r, _ := fakeRig(p)
	if _, err := NewInterlock(twoZoneEnvelope(t), r, tokens{}, &auditLog{}, InterlockOpts{}); !errors.Is(err, ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "rig.zones.growth: missing") {
		t.Fatalf("a rig of two zones with one controller: %v", err)
	}
	r.Zones = map[string]device.TemperatureController{"growth": fakeFurnace{p}, "other": fakeFurnace{p}}
	if _, err := NewInterlock(twoZoneEnvelope(t), r, tokens{}, &auditLog{}, InterlockOpts{}); !errors.Is(err, ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "rig.zones: 2 controllers for the 1 zones after the first") {
		t.Fatalf("an extra zone controller: %v", err)
	}
}

func TestCompileTwoZones(t *testing.T) {
	env := twoZoneEnvelope(t)
	want := []string{"growth.heater", "growth.ramp_rate", "growth.setpoint", "sulfur.heater", "sulfur.ramp_rate", "sulfur.setpoint"}
	var got []string
	for _, ch := range env.Spec().WritableChannels() {
		if strings.HasPrefix(ch, "growth.") || strings.HasPrefix(ch, "sulfur.") || strings.HasPrefix(ch, "furnace.") {
			got = append(got, ch)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("zone channels %v, want %v", got, want)
	}
	if l := env.zones[0].overTemp; env.zones[0].name != "sulfur" || l == nil || !near(l.max, device.Celsius(240).Kelvin()) {
		t.Fatalf("sulfur zone %+v", env.zones[0])
	}
	if l := env.zones[1].overTemp; env.zones[1].name != "growth" || l == nil || !near(l.max, device.Celsius(1050).Kelvin()) {
		t.Fatalf("growth zone %+v", env.zones[1])
	}
}

// TestCompileRefusesZoneProblems: a limit or trip threshold naming a zone
// the rig lacks is a *ConfigError wrapping ErrUnknownZone at its key; no
// zone's writable channel is left unbounded, nor its trip without a max.
func TestCompileRefusesZoneProblems(t *testing.T) {
	for _, tt := range []struct {
		name    string
		edit    func(*Config)
		path    string
		unknown bool // ErrUnknownZone
	}{
		{"a limit of a zone the rig lacks", func(c *Config) {
			c.Parameters["upstream.setpoint"] = Parameter{Max: f64(200), Unit: "celsius"}
		}, "parameters.upstream.setpoint", true},
		{"the trip of a zone the rig lacks", func(c *Config) {
			c.Parameters["upstream.temperature"] = Parameter{Max: f64(200), Unit: "celsius"}
		}, "parameters.upstream.temperature", true},
		{"the furnace's limits on a rig without a zone furnace", func(c *Config) {
			c.Parameters["furnace.setpoint"] = Parameter{Max: f64(200), Unit: "celsius"}
		}, "parameters.furnace.setpoint", true},
		{"a flow of a gas the rig lacks, whose name is a zone's quantity", func(c *Config) {
			c.Parameters["flow.setpoint"] = Parameter{Max: f64(10), Unit: "sccm"}
		}, "parameters.flow.setpoint", false},
		{"a zone's setpoint unbounded", func(c *Config) { delete(c.Parameters, "sulfur.setpoint") }, "channel sulfur.setpoint", false},
		{"a zone's ramp rate unbounded", func(c *Config) { delete(c.Parameters, "growth.ramp_rate") }, "channel growth.ramp_rate", false},
		{"a zone without its over_temperature", func(c *Config) { delete(c.Parameters, "sulfur.temperature") }, "parameters.sulfur.temperature", false},
		{"a limit beyond the zone's own range", func(c *Config) {
			c.Parameters["sulfur.setpoint"] = Parameter{Max: f64(600), Unit: "celsius"} // the growth zone's range holds it, not the sulfur's
		}, "parameters.sulfur.setpoint.max", false},
		{"min_temperature without its zone on a rig of two", func(c *Config) {
			g := c.Interlocks.Gases["H2S"]
			g.MinTemperature = &Quantity{Value: 150, Unit: "celsius"}
			c.Interlocks.Gases["H2S"] = g
		}, "interlocks.gases.H2S.zone", false},
		{"min_temperature of a zone the rig lacks", func(c *Config) {
			g := c.Interlocks.Gases["H2S"]
			g.MinTemperature, g.Zone = &Quantity{Value: 150, Unit: "celsius"}, "upstream"
			c.Interlocks.Gases["H2S"] = g
		}, "interlocks.gases.H2S.zone", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := twoZoneConfig(t)
			tt.edit(&cfg)
			_, err := Compile(cfg, twoZoneSpec())
			var found *ConfigError
			for _, e := range unjoinAll(err) {
				var ce *ConfigError
				if errors.As(e, &ce) && ce.Path == tt.path {
					found = ce
				}
			}
			if found == nil {
				t.Fatalf("no problem at %s: %v", tt.path, err)
			}
			if !errors.Is(found, ErrInvalidConfig) || errors.Is(found, ErrUnknownZone) != tt.unknown {
				t.Fatalf("%v: ErrUnknownZone %v, want %v", found, errors.Is(found, ErrUnknownZone), tt.unknown)
			}
		})
	}
	// The zone a min_temperature names is judged: growth at 900 °C.
	cfg := twoZoneConfig(t)
	g := cfg.Interlocks.Gases["H2S"]
	g.MinTemperature, g.Zone = &Quantity{Value: 900, Unit: "celsius"}, "growth"
	cfg.Interlocks.Gases["H2S"] = g
	env, err := Compile(cfg, twoZoneSpec())
	if err != nil {
		t.Fatal(err)
	}
	if r := env.gasRules["H2S"]; !r.hasMinTemp || r.zone != 1 {
		t.Fatalf("H2S rule %+v", r)
	}
}

func unjoinAll(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoinAll(e)...)
		}
		return out
	}
	return []error{err}
}

// TestZoneLimitsPerZone: 300 °C is over the sulfur zone's 220 °C limit and
// refused before it reaches a controller, while the growth zone takes it;
// each write reaches its own zone's controller.
func TestZoneLimitsPerZone(t *testing.T) {
	f := newTwoZoneFixture(t, tokens{})
	ctx := context.Background()
	_, err := f.il.apply(ctx, "ok", ZoneSetpointAction("sulfur", device.Celsius(300)))
	var v *Violation
	if !errors.As(err, &v) || v.Rule != RuleMax || v.Channel != "sulfur.setpoint" || v.Limit != 220 {
		t.Fatalf("sulfur at 300 °C: %v", err)
	}
	if n := f.p.writeCount(); n != 0 {
		t.Fatalf("%d writes reached the rig", n)
	}
	if _, err := f.il.apply(ctx, "ok", ZoneSetpointAction("growth", device.Celsius(300))); err != nil {
		t.Fatalf("growth at 300 °C: %v", err)
	}
	if _, err := f.il.apply(ctx, "ok", ZoneSetpointAction("sulfur", device.Celsius(200))); err != nil {
		t.Fatalf("sulfur at 200 °C: %v", err)
	}
	if s, g := f.zone("sulfur"), f.zone("growth"); !near(float64(s.Setpoint), float64(device.Celsius(200))) || !near(float64(g.Setpoint), float64(device.Celsius(300))) {
		t.Fatalf("setpoints: sulfur %v, growth %v", s.Setpoint, g.Setpoint)
	}
	// The furnace's channels are no zone's on this rig: refused, not sent
	// to the first zone.
	if _, err := f.il.apply(ctx, "ok", SetpointAction(device.Celsius(100))); !errors.As(err, &v) || v.Rule != RuleUnknownChannel {
		t.Fatalf("furnace.setpoint on a rig of sulfur and growth: %v", err)
	}
}

// TestVentWhileAnyZoneHot: venting_while_hot judges every zone: a cold
// growth zone does not let the vent open while the sulfur zone is hot or
// its heater on.
func TestVentWhileAnyZoneHot(t *testing.T) {
	env := twoZoneEnvelope(t)
	rd := func(sulfur, growth device.FurnaceStatus) Readings {
		sulfur.At, growth.At = t0, t0
		return Readings{At: t0, Furnace: sulfur, Zones: map[string]device.FurnaceStatus{"growth": growth},
			Pressure: device.PressureReading{Pressure: 1000 * device.Millibar, Status: device.GaugeOverrange, At: t0},
			Flows:    map[string]device.FlowStatus{"Ar": {At: t0}, "H2": {At: t0}, "H2S": {At: t0}},
			Switches: map[string]Level{"gate_valve": {At: t0}, "vent_valve": {At: t0}, "ar_valve": {At: t0}, "h2_valve": {At: t0}, "h2s_valve": {At: t0}}}
	}
	cold := device.FurnaceStatus{ProcessValue: device.Celsius(25)}
	vent := SwitchAction("vent_valve", true)
	if err := env.Check(vent, rd(cold, cold), nil); err != nil {
		t.Fatalf("both cold: %v", err)
	}
	for _, tt := range []struct {
		name           string
		sulfur, growth device.FurnaceStatus
		reason         string
	}{
		{"sulfur hot", device.FurnaceStatus{ProcessValue: device.Celsius(150)}, cold, "zone sulfur: the furnace is too hot"},
		{"growth hot", cold, device.FurnaceStatus{ProcessValue: device.Celsius(700)}, "zone growth: the furnace is too hot"},
		{"sulfur heater on", device.FurnaceStatus{ProcessValue: device.Celsius(25), HeaterEnabled: true}, cold, "zone sulfur: the heater is enabled"},
		{"growth unread", cold, device.FurnaceStatus{ProcessValue: device.Celsius(25), At: t0.Add(-time.Hour)}, "zone growth: furnace temperature"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rd(tt.sulfur, tt.growth)
			if !tt.growth.At.IsZero() { // an old reading: rd stamps the others now
				g := r.Zones["growth"]
				g.At = tt.growth.At
				r.Zones["growth"] = g
			}
			err := env.Check(vent, r, nil)
			var v *Violation
			if !errors.As(err, &v) || (v.Rule != RuleVentHot && v.Rule != RuleStale) || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("got %v, want a refusal saying %q", err, tt.reason)
			}
		})
	}
}

// TestTwoZoneTripHaltsEveryZone: the sulfur zone over its own 240 °C (the
// growth zone far below its 1050 °C) trips over_temperature on
// sulfur.temperature; immediate_shutdown turns off both zones' heaters and
// closes every gas line.
func TestTwoZoneTripHaltsEveryZone(t *testing.T) {
	f := newTwoZoneFixture(t, tokens{})
	f.set(func(p *plant) {
		f.zones["sulfur"].HeaterEnabled, f.zones["growth"].HeaterEnabled = true, true
		f.zones["growth"].ProcessValue = device.Celsius(700)
		for _, g := range []string{"Ar", "H2"} {
			p.flows[g] = device.FlowStatus{Gas: g, Setpoint: 50, Flow: 50}
		}
		p.switches["ar_valve"], p.switches["h2_valve"] = true, true
	})
	m, err := NewMonitor(f.il, fastMonitorOpts())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	mf := &monFixture{fixture: f.fixture, m: m}
	waitFor(t, "both zones read", func() bool {
		r := m.Readings()
		return !r.Furnace.At.IsZero() && !r.Zones["growth"].At.IsZero()
	})
	mf.settle(3)
	if n := len(mf.tripped()); n != 0 {
		t.Fatalf("tripped %d times with both zones within their limits", n)
	}

	f.set(func(*plant) { f.zones["sulfur"].ProcessValue = device.Celsius(245) })
	waitFor(t, "over_temperature", func() bool { return len(mf.tripped()) == 1 })
	e := mf.tripped()[0]
	if e.Trip != TripOverTemperature || e.Rule != Rule(ProcImmediateShutdown) || len(e.Readings) != 1 || e.Readings[0].Channel != "sulfur.temperature" {
		t.Fatalf("trip entry %+v", e)
	}
	if s, g := f.zone("sulfur"), f.zone("growth"); s.HeaterEnabled || g.HeaterEnabled {
		t.Fatalf("heaters after the trip: sulfur %v, growth %v", s.HeaterEnabled, g.HeaterEnabled)
	}
	for _, name := range []string{"tc-sulfur", "tc-growth", "mfc-Ar", "mfc-H2", "mfc-H2S", "ar_valve", "h2_valve", "h2s_valve", "relay"} {
		if mf.halted(name) == 0 {
			t.Errorf("%s not halted", name)
		}
	}
	f.p.mu.Lock()
	for g, st := range f.p.flows {
		if st.Setpoint != 0 {
			t.Errorf("flow %s at %v after the trip", g, st.Setpoint)
		}
	}
	for _, v := range []string{"ar_valve", "h2_valve", "h2s_valve"} {
		if f.p.switches[v] {
			t.Errorf("%s open after the trip", v)
		}
	}
	f.p.mu.Unlock()
	if latched, _ := f.il.Latched(); !latched {
		t.Fatal("not latched")
	}
	// The growth zone's own limit trips too: its reading is the growth
	// zone's, not the sulfur zone's.
	if evs := f.il.env.EvaluateTrips(Readings{At: t0, Furnace: device.FurnaceStatus{ProcessValue: device.Celsius(25), At: t0},
		Zones: map[string]device.FurnaceStatus{"growth": {ProcessValue: device.Celsius(1100), At: t0}}}); len(evs) == 0 ||
		evs[0].Trip != TripOverTemperature || evs[0].Channel != "growth.temperature" {
		t.Fatalf("growth at 1100 °C: %+v", evs)
	}
}

// TestZoneToolsReachTheirZone: growth.set_setpoint reaches the growth
// zone's controller and channel, sulfur.set_heater the sulfur zone's; a
// zone action's tool is its zone's (ToolFor).
func TestZoneToolsReachTheirZone(t *testing.T) {
	f := newTwoZoneFixture(t, toolTokens{})
	l := rig.Layout{Zones: []rig.Zone{{Name: "sulfur", Controller: "tc-sulfur"}, {Name: "growth", Controller: "tc-growth"}}}
	for _, g := range SimRigSpec().Gases {
		l.Lines = append(l.Lines, rig.Line{Gas: g.Gas, Valve: g.Valve, FullScale: g.FullScale, Hazard: g.Hazard})
	}
	reg, err := catalog.Generate(l)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := NewInvoker(f.il, reg, InvokerOpts{Clock: f.p.clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := iv.Invoke(ctx, "ok", ref("growth.set_setpoint"), json.RawMessage(`{"setpoint": 650, "unit": "celsius"}`))
	if err != nil {
		t.Fatal(err)
	}
	var w struct{ Channel string }
	if err := json.Unmarshal(out, &w); err != nil || w.Channel != "growth.setpoint" {
		t.Fatalf("output %s (%v)", out, err)
	}
	if g, s := f.zone("growth"), f.zone("sulfur"); !near(float64(g.Setpoint), float64(device.Celsius(650))) || !near(float64(s.Setpoint), float64(device.Celsius(25))) {
		t.Fatalf("setpoints: growth %v, sulfur %v", g.Setpoint, s.Setpoint)
	}
	_, err = iv.Invoke(ctx, "ok", ref("sulfur.set_setpoint"), json.RawMessage(`{"setpoint": 650, "unit": "celsius"}`))
	var v *Violation
	if !errors.As(err, &v) || v.Channel != "sulfur.setpoint" || v.Rule != RuleMax {
		t.Fatalf("sulfur at 650 °C: %v", err)
	}
	if _, err := iv.Invoke(ctx, "ok", ref("sulfur.set_heater"), json.RawMessage(`{"on": false}`)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		a    Action
		tool string
	}{
		{ZoneSetpointAction("growth", device.Celsius(650)), "growth.set_setpoint"},
		{ZoneRampRateAction("sulfur", 5), "sulfur.set_ramp_rate"},
		{ZoneHeaterAction("growth", false), "growth.set_heater"},
		{HeaterAction(false), catalog.ToolSetHeater},
		{ZoneHeaterAction(rig.FurnaceName, false), catalog.ToolSetHeater},
	} {
		if r, _, err := iv.ToolFor(tt.a); err != nil || r.Name != tt.tool {
			t.Errorf("ToolFor(%v) = %v, %v; want %s", tt.a, r, err, tt.tool)
		}
	}
	if a := ZoneSetpointAction(rig.FurnaceName, 1); a != SetpointAction(1) {
		t.Errorf("the furnace zone's action %+v is not SetpointAction's", a)
	}
}

// TestTwoZoneSafeStateAndSilence: the e-stop's safe_state turns off both
// zones' heaters; a silent second zone is comms_loss on its own
// temperature channel; a setpoint is judged on its own zone's reading (a
// stale one falls back on the heater interlock, which the chamber at
// atmosphere without Ar fails; the other zone, read and off, takes its
// setpoint).
func TestTwoZoneSafeStateAndSilence(t *testing.T) {
	f := newTwoZoneFixture(t, tokens{})
	f.set(func(*plant) { f.zones["sulfur"].HeaterEnabled, f.zones["growth"].HeaterEnabled = true, true })
	if err := f.il.SafeState(context.Background(), "test e-stop"); err != nil {
		t.Fatal(err)
	}
	if s, g := f.zone("sulfur"), f.zone("growth"); s.HeaterEnabled || g.HeaterEnabled {
		t.Fatalf("heaters after safe_state: sulfur %v, growth %v", s.HeaterEnabled, g.HeaterEnabled)
	}

	env := f.il.env
	now := t0.Add(10 * time.Second)
	r := Readings{At: now, Furnace: device.FurnaceStatus{ProcessValue: device.Celsius(25), At: now},
		Zones: map[string]device.FurnaceStatus{"growth": {ProcessValue: device.Celsius(25), At: t0}}}
	var lost []string
	for _, ev := range env.EvaluateTrips(r) {
		if ev.Trip == TripCommsLoss && strings.HasSuffix(ev.Channel, ".temperature") {
			lost = append(lost, ev.Channel)
		}
	}
	if strings.Join(lost, ",") != "growth.temperature" {
		t.Fatalf("comms_loss on %v, want growth.temperature alone", lost)
	}
	r.Pressure = device.PressureReading{Pressure: 900 * device.Millibar, Status: device.GaugeOK, At: now}
	r.Flows = map[string]device.FlowStatus{"Ar": {Gas: "Ar", At: now}}
	err := env.Check(ZoneSetpointAction("growth", device.Celsius(300)), r, nil)
	var v *Violation
	if !errors.As(err, &v) || v.Rule != RuleHeater || v.Channel != "growth.setpoint" {
		t.Fatalf("growth's setpoint on a stale growth reading: %v, want %s", err, RuleHeater)
	}
	if err := env.Check(ZoneSetpointAction("sulfur", device.Celsius(200)), r, nil); err != nil {
		t.Fatalf("sulfur's setpoint on a fresh sulfur reading: %v", err)
	}
}

// TestCompileRefusesBadZones: a zone named twice, named as another
// channel's first part, holding a dot, or whose first range is not
// RigSpec.Furnace is refused at rig.zones.
func TestCompileRefusesBadZones(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*RigSpec)
	}{
		{"twice", func(s *RigSpec) { s.Zones[1].Name = "sulfur" }},
		{"named as the flows", func(s *RigSpec) { s.Zones[1].Name = "flow" }},
		{"a dot", func(s *RigSpec) { s.Zones[1].Name = "growth.2" }},
		{"the first range not the furnace's", func(s *RigSpec) { s.Furnace.SetpointMax++ }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := twoZoneSpec()
			tt.edit(&s)
			_, err := Compile(twoZoneConfig(t), s)
			var ce *ConfigError
			found := false
			for _, e := range unjoinAll(err) {
				if errors.As(e, &ce) && ce.Path == "rig.zones" {
					found = true
				}
			}
			if !found {
				t.Fatalf("no problem at rig.zones: %v", err)
			}
		})
	}
}

// TestTwoZoneSnapshot: rig.read_snapshot reports the sulfur zone as its
// furnace and the growth zone under zones; an unread or open growth zone
// fails the call rather than reporting the first zone alone.
func TestTwoZoneSnapshot(t *testing.T) {
	f := newTwoZoneFixture(t, toolTokens{})
	reg, err := catalog.Builtin(SimRigSpec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	iv, err := NewInvoker(f.il, reg, InvokerOpts{Clock: f.p.clock})
	if err != nil {
		t.Fatal(err)
	}
	f.set(func(*plant) {
		f.zones["sulfur"].ProcessValue = device.Celsius(180)
		f.zones["growth"].ProcessValue = device.Celsius(750)
	})
	out, err := iv.Invoke(context.Background(), "ok", ref(catalog.ToolSnapshot), nil)
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Furnace struct {
			Temperature float64 `json:"temperature_c"`
		} `json:"furnace"`
		Zones map[string]struct {
			Temperature float64 `json:"temperature_c"`
		} `json:"zones"`
	}
	if err := json.Unmarshal(out, &snap); err != nil {
		t.Fatal(err)
	}
	if !near(snap.Furnace.Temperature, 180) || len(snap.Zones) != 1 || !near(snap.Zones["growth"].Temperature, 750) {
		t.Fatalf("snapshot %s", out)
	}
	f.set(func(*plant) { f.zones["growth"].Alarms = device.AlarmSensorBreak })
	if _, err := iv.Invoke(context.Background(), "ok", ref(catalog.ToolSnapshot), nil); !errors.Is(err, device.ErrSensor) || !strings.Contains(err.Error(), "zone growth") {
		t.Fatalf("growth's thermocouple open: %v", err)
	}
	f.set(func(p *plant) { f.zones["growth"].Alarms = 0; p.fail["tc-growth"] = true })
	if _, err := iv.Invoke(context.Background(), "ok", ref(catalog.ToolSnapshot), nil); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "zone growth") {
		t.Fatalf("growth unread: %v", err)
	}
}
