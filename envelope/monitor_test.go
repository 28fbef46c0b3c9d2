package envelope

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/device"
)

// monitorGuard bounds every wait of the monitor tests: a hang guard, not a
// performance assertion.
const monitorGuard = 10 * time.Second

// kickFurnace counts watchdog kicks.
type kickFurnace struct {
	fakeFurnace
	kicks *atomic.Int64
}

func (k kickFurnace) KickWatchdog(context.Context) error { k.kicks.Add(1); return nil }

// blockingGauge never answers: every read waits for its context.
type blockingGauge struct{ fakeGauge }

func (blockingGauge) ReadPressure(ctx context.Context) (device.PressureReading, error) {
	<-ctx.Done()
	return device.PressureReading{}, device.ErrTimeout
}

type monFixture struct {
	*fixture
	m     *Monitor
	kicks *atomic.Int64
}

func fastMonitorOpts() MonitorOpts {
	return MonitorOpts{FurnaceEvery: 5 * time.Millisecond, OtherEvery: 10 * time.Millisecond, KickEvery: 10 * time.Millisecond}
}

// newMonFixture builds an interlock over the fake rig (mutated by mutate, if
// given) and a started monitor with fast poll periods.
func newMonFixture(t *testing.T, mutate func(*Rig, *plant)) *monFixture {
	t.Helper()
	p := newPlant(t0)
	rig, sws := fakeRig(p)
	kicks := &atomic.Int64{}
	rig.Furnace = kickFurnace{fakeFurnace{p}, kicks}
	if mutate != nil {
		mutate(&rig, p)
	}
	audit := &auditLog{}
	opts := DefaultInterlockOpts()
	opts.Clock = p.clock
	opts.ReadTimeout = 50 * time.Millisecond
	il, err := NewInterlock(testEnvelope(t), rig, tokens{}, audit, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMonitor(il, fastMonitorOpts())
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
	return &monFixture{fixture: &fixture{il: il, p: p, audit: audit, sw: sws}, m: m, kicks: kicks}
}

// silence makes the plant's instrument (or bank) name stop answering and
// checks that the monitor trips for comms loss once: not 2 s later (within
// the test envelope's comms timeout), but 3.5 s later (past it).
func (f *monFixture) silence(t *testing.T, name string) {
	t.Helper()
	f.set(func(p *plant) { p.fail[name] = true })
	f.p.advance(2 * time.Second)
	f.settle(5)
	if n := len(f.tripped()); n != 0 {
		t.Fatalf("tripped %d times within the comms timeout", n)
	}
	f.p.advance(1500 * time.Millisecond)
	waitFor(t, "comms_loss", func() bool { return len(f.tripped()) == 1 })
	if e := f.tripped()[0]; e.Trip != TripCommsLoss {
		t.Fatalf("entry %+v", e)
	}
}

// waitFor polls cond until it holds or the hang guard runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(monitorGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (f *monFixture) set(fn func(*plant)) {
	f.p.mu.Lock()
	fn(f.p)
	f.p.mu.Unlock()
}

func (f *monFixture) tripped() []Entry {
	f.audit.mu.Lock()
	defer f.audit.mu.Unlock()
	var out []Entry
	for _, e := range f.audit.entries {
		if e.Decision == DecisionTripped {
			out = append(out, e)
		}
	}
	return out
}

func (f *monFixture) halted(name string) int {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	n := 0
	for _, h := range f.p.halts {
		if h == name {
			n++
		}
	}
	return n
}

// settle waits for n more evaluations' worth of polls.
func (f *monFixture) settle(n int) { time.Sleep(time.Duration(n) * 10 * time.Millisecond) }

func (f *monFixture) allHealthy() bool {
	st := f.m.Status()
	for _, ok := range st.Healthy {
		if !ok {
			return false
		}
	}
	return len(st.Healthy) > 0
}

func TestNewMonitorRefusesBadOpts(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		opts MonitorOpts
	}{
		{"negative kick", MonitorOpts{KickEvery: -time.Second}},
		{"furnace slower than the comms timeout", MonitorOpts{FurnaceEvery: 3 * time.Second}},
		{"others slower than the comms timeout", MonitorOpts{OtherEvery: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewMonitor(f.il, tt.opts); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := NewMonitor(nil, DefaultMonitorOpts()); err == nil {
		t.Fatal("nil interlock accepted")
	}
	m, err := NewMonitor(f.il, MonitorOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if m.opts.FurnaceEvery != 50*time.Millisecond || m.opts.OtherEvery != 100*time.Millisecond || m.opts.KickEvery != 0 {
		t.Fatalf("defaults %+v", m.opts)
	}
}

func TestMonitorIdleRigNoTripMarginsHealth(t *testing.T) {
	f := newMonFixture(t, nil)
	waitFor(t, "every instrument healthy", f.allHealthy)
	waitFor(t, "watchdog kicks", func() bool { return f.kicks.Load() >= 2 })
	f.settle(5)
	st := f.m.Status()
	if st.Latched || len(st.Trips) != 0 || len(f.tripped()) != 0 {
		t.Fatalf("an idle rig tripped: %+v", st.Trips)
	}
	want := map[string]bool{ChannelTemperature: true, ChannelPressure: true, ChannelSetpoint: true, ChannelRampRate: true,
		FlowChannel("Ar"): true, FlowChannel("H2"): true, FlowChannel("H2S"): true}
	for _, m := range st.Margins {
		if !want[m.Channel] {
			t.Errorf("unexpected margin %+v", m)
		}
		delete(want, m.Channel)
		if m.Headroom() < 0 {
			t.Errorf("idle rig outside a limit: %+v", m)
		}
	}
	if len(want) != 0 {
		t.Fatalf("margins missing for %v", want)
	}
	for _, m := range st.Margins {
		if m.Channel == ChannelTemperature && (m.Unit != "celsius" || !closeTo(m.Value, 25) || m.Max != 1050) {
			t.Fatalf("temperature margin %+v", m)
		}
	}
	if len(st.Healthy) != 1+1+3+8+6 {
		t.Fatalf("health of %d instruments: %v", len(st.Healthy), st.Healthy)
	}
	if r := f.m.Readings(); r.Furnace.At.IsZero() || len(r.Switches) != 8 || len(r.Inputs) != 6 {
		t.Fatalf("readings %+v", r)
	}
}

func TestMonitorTripsOncePerOnsetAndReasserts(t *testing.T) {
	f := newMonFixture(t, nil)
	events, cancel := f.m.Subscribe()
	defer cancel()
	waitFor(t, "healthy", f.allHealthy)
	f.set(func(p *plant) {
		p.furnace.HeaterEnabled = true
		p.furnace.ProcessValue = device.Celsius(1100)
	})
	select {
	case ev := <-events:
		if ev.Trip != TripOverTemperature || ev.Procedure != ProcImmediateShutdown || ev.At.IsZero() {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(monitorGuard):
		t.Fatal("no trip")
	}
	waitFor(t, "the trip audited", func() bool { return len(f.tripped()) == 1 })
	if latched, why := f.il.Latched(); !latched || why != string(TripOverTemperature) {
		t.Fatalf("latched %v %q", latched, why)
	}
	waitFor(t, "heater halted", func() bool { return f.halted("furnace") >= 1 })
	f.settle(10)
	if n := len(f.tripped()); n != 1 {
		t.Fatalf("%d trips audited for one onset", n)
	}
	// Something re-enables the heater while the condition holds: the monitor
	// halts it again, without a new trip.
	before := f.halted("furnace")
	f.set(func(p *plant) { p.furnace.HeaterEnabled = true })
	waitFor(t, "re-assertion", func() bool { return f.halted("furnace") > before })
	waitFor(t, "heater off again", func() bool {
		f.p.mu.Lock()
		defer f.p.mu.Unlock()
		return !f.p.furnace.HeaterEnabled
	})
	if n := len(f.tripped()); n != 1 {
		t.Fatalf("re-assertion audited as %d trips", n)
	}
	// While latched, only safe actions pass.
	if _, err := f.il.apply(context.Background(), "ok", SetpointAction(device.Celsius(100))); !errors.Is(err, ErrViolation) {
		t.Fatalf("apply while latched: %v", err)
	}
	// Reset refuses while the condition holds, and succeeds once it is gone.
	var v *Violation
	if err := f.il.Reset(context.Background(), "alice"); !errors.As(err, &v) || v.Rule != RuleLatched {
		t.Fatalf("reset while hot: %v", err)
	}
	f.set(func(p *plant) { p.furnace.ProcessValue = device.Celsius(900) })
	waitFor(t, "condition gone", func() bool { return f.m.Readings().Furnace.ProcessValue < device.Celsius(1000) })
	if err := f.il.Reset(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	f.settle(5)
	if latched, _ := f.il.Latched(); latched || len(f.tripped()) != 1 {
		t.Fatalf("after reset: latched %v, %d trips", latched, len(f.tripped()))
	}
	// A new onset trips again.
	f.set(func(p *plant) { p.furnace.ProcessValue = device.Celsius(1200) })
	waitFor(t, "second onset", func() bool { return len(f.tripped()) == 2 })
	if st := f.m.Status(); len(st.Trips) != 2 || !st.Latched {
		t.Fatalf("status %+v", st)
	}
}

func TestMonitorRetripsWhenUnlatchedWhileConditionHolds(t *testing.T) {
	f := newMonFixture(t, nil)
	waitFor(t, "healthy", f.allHealthy)
	f.set(func(p *plant) { p.inputs["estop_pressed"] = true })
	waitFor(t, "estop trip", func() bool { return len(f.tripped()) == 1 })
	if e := f.tripped()[0]; e.Trip != TripEStop || e.Rule != Rule(ProcSafeState) {
		t.Fatalf("entry %+v", e)
	}
	// Bypass Reset's own check, as a second agent process could: the monitor
	// trips again at once.
	f.il.mu.Lock()
	f.il.latched, f.il.latchReason = false, ""
	f.il.mu.Unlock()
	waitFor(t, "re-trip", func() bool { return len(f.tripped()) == 2 })
	if latched, _ := f.il.Latched(); !latched {
		t.Fatal("not latched again")
	}
}

func TestMonitorCommsLoss(t *testing.T) {
	f := newMonFixture(t, nil)
	waitFor(t, "healthy", f.allHealthy)
	f.silence(t, "gauge")
	st := f.m.Status()
	if st.Healthy["gauge"] || !st.Healthy["furnace"] {
		t.Fatalf("health %v", st.Healthy)
	}
	waitFor(t, "every instrument halted", func() bool { return f.halted("furnace") > 0 && f.halted("pump") > 0 && f.halted("raman") > 0 })
	f.set(func(p *plant) { p.fail["gauge"] = false })
	waitFor(t, "gauge healthy", func() bool { return f.m.Status().Healthy["gauge"] })
	if err := f.il.Reset(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
}

func TestMonitorSilentInstrumentDoesNotStallOthers(t *testing.T) {
	f := newMonFixture(t, func(r *Rig, p *plant) { r.Gauge = blockingGauge{fakeGauge{p}} })
	for _, c := range []float64{100, 200, 300} {
		f.set(func(p *plant) { p.furnace.ProcessValue = device.Celsius(c) })
		waitFor(t, "furnace updates while the gauge hangs", func() bool {
			return closeTo(float64(f.m.Readings().Furnace.ProcessValue), float64(device.Celsius(c)))
		})
	}
	if f.m.Status().Healthy["gauge"] {
		t.Fatal("a gauge that never answered is healthy")
	}
}

func TestMonitorOverPressureIdleVsInProcess(t *testing.T) {
	f := newMonFixture(t, nil)
	waitFor(t, "healthy", f.allHealthy)
	// Vented and idle: the gauge reads overrange, which is normal.
	f.set(func(p *plant) {
		p.pressure = device.PressureReading{Pressure: 1000 * device.Millibar, Status: device.GaugeOverrange}
	})
	waitFor(t, "overrange cached", func() bool { return f.m.Readings().Pressure.Status == device.GaugeOverrange })
	f.settle(5)
	if n := len(f.tripped()); n != 0 {
		t.Fatalf("idle vented chamber tripped: %+v", f.tripped())
	}
	// Argon starts flowing into the chamber at atmosphere.
	f.set(func(p *plant) { p.flows["Ar"] = device.FlowStatus{Gas: "Ar", Flow: 100, Setpoint: 100} })
	waitFor(t, "over_pressure", func() bool { return len(f.tripped()) == 1 })
	if e := f.tripped()[0]; e.Trip != TripOverPressure || e.Rule != Rule(ProcImmediateShutdown) {
		t.Fatalf("entry %+v", e)
	}
	// immediate_shutdown: gas lines and the heater, not the pump.
	waitFor(t, "shut down", func() bool {
		return f.halted("mfc-Ar") > 0 && f.halted("ar_valve") > 0 && f.halted("furnace") > 0
	})
	if f.halted("pump") != 0 {
		t.Fatal("immediate_shutdown halted the pump")
	}
	// The procedure stopped the gas: the condition is gone, reset passes.
	waitFor(t, "condition gone", func() bool { return f.m.Readings().Flows["Ar"].Flow == 0 })
	if err := f.il.Reset(context.Background(), "carol"); err != nil {
		t.Fatal(err)
	}
}

func TestEvaluateOverPressureRules(t *testing.T) {
	env := testEnvelope(t)
	mbar := func(r *Readings, v float64, s device.GaugeStatus) {
		r.Pressure.Pressure, r.Pressure.Status = device.Pressure(v)*device.Millibar, s
	}
	tests := []struct {
		name  string
		setup func(r *Readings)
		trip  bool
	}{
		{"idle vented, overrange", func(r *Readings) { mbar(r, 1000, device.GaugeOverrange) }, false},
		{"idle venting, 950 mbar in range", func(r *Readings) { mbar(r, 950, device.GaugeOK) }, false},
		{"idle, vent valve open at atmosphere", func(r *Readings) { mbar(r, 1000, device.GaugeOverrange); setSwitch(r, "vent_valve", true) }, false},
		{"pumping down from atmosphere", func(r *Readings) {
			mbar(r, 1000, device.GaugeOverrange)
			setSwitch(r, "pump", true)
			setSwitch(r, "gate_valve", true)
		}, false},
		{"Ar flowing, overrange", func(r *Readings) { mbar(r, 1000, device.GaugeOverrange); setFlow(r, "Ar", 100) }, true},
		{"Ar flowing, 901 mbar", func(r *Readings) { mbar(r, 901, device.GaugeOK); setFlow(r, "Ar", 100) }, true},
		{"Ar flowing, 900 mbar", func(r *Readings) { mbar(r, 900, device.GaugeOK); setFlow(r, "Ar", 100) }, false},
		{"Ar below the flow-on threshold", func(r *Readings) { mbar(r, 1000, device.GaugeOverrange); setFlow(r, "Ar", 0.3) }, false},
		{"Ar line valve open, overrange", func(r *Readings) { mbar(r, 1000, device.GaugeOverrange); setSwitch(r, "ar_valve", true) }, true},
		{"heater enabled, overrange", func(r *Readings) { mbar(r, 1000, device.GaugeOverrange); r.Furnace.HeaterEnabled = true }, true},
		{"H2S flowing above its 10 mbar", func(r *Readings) { mbar(r, 20, device.GaugeOK); setFlow(r, "H2S", 5) }, true},
		{"H2S line open above its 10 mbar", func(r *Readings) { mbar(r, 20, device.GaugeOK); setSwitch(r, "h2s_valve", true) }, true},
		{"H2S flowing at 5 mbar", func(r *Readings) { mbar(r, 5, device.GaugeOK); setFlow(r, "H2S", 5) }, false},
		{"H2 flowing at 50 mbar", func(r *Readings) { mbar(r, 50, device.GaugeOK); setFlow(r, "H2", 20) }, false},
		{"H2 flowing at 150 mbar", func(r *Readings) { mbar(r, 150, device.GaugeOK); setFlow(r, "H2", 20) }, true},
		{"heater on, vacuum lost, no Ar", func(r *Readings) { mbar(r, 5, device.GaugeOK); r.Furnace.HeaterEnabled = true }, true},
		{"heater on at 5 mbar under Ar", func(r *Readings) { mbar(r, 5, device.GaugeOK); r.Furnace.HeaterEnabled = true; setFlow(r, "Ar", 60) }, false},
		{"heater on under vacuum", func(r *Readings) { mbar(r, 0.5, device.GaugeOK); r.Furnace.HeaterEnabled = true }, false},
		{"underrange never", func(r *Readings) { mbar(r, 5e-9, device.GaugeUnderrange); setFlow(r, "H2S", 5) }, false},
		{"a dead flow reading is comms_loss, not gas in use", func(r *Readings) {
			mbar(r, 1000, device.GaugeOverrange)
			r.Flows["Ar"] = device.FlowStatus{Gas: "Ar", Flow: 100, At: r.At.Add(-time.Minute)}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := safeReadings(t0)
			tt.setup(&r)
			var got []TripEvent
			for _, ev := range env.EvaluateTrips(r) {
				if ev.Trip == TripOverPressure {
					got = append(got, ev)
				}
			}
			if tt.trip != (len(got) == 1) || len(got) > 1 {
				t.Fatalf("over_pressure events %+v, want trip=%v", got, tt.trip)
			}
			if tt.trip && (got[0].Procedure != ProcImmediateShutdown || got[0].Unit != "mbar" || got[0].Reason == "" || !got[0].At.Equal(t0)) {
				t.Fatalf("event %+v", got[0])
			}
		})
	}
}

func TestMonitorSubscribeKeepsNewest(t *testing.T) {
	f := newFixture(t)
	m, err := NewMonitor(f.il, DefaultMonitorOpts())
	if err != nil {
		t.Fatal(err)
	}
	ch, cancel := m.Subscribe()
	m.mu.Lock()
	m.publishLocked(TripEvent{Trip: TripGasLeak})
	m.publishLocked(TripEvent{Trip: TripEStop})
	m.mu.Unlock()
	if ev := <-ch; ev.Trip != TripEStop {
		t.Fatalf("got %s, want the newest", ev.Trip)
	}
	cancel()
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("channel open after cancel")
	}
	ch2, _ := m.Subscribe()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch2; ok {
		t.Fatal("channel open after Close")
	}
	if err := m.Start(context.Background()); err == nil {
		t.Fatal("Start after Close")
	}
	if ch3, _ := m.Subscribe(); ch3 == nil {
		t.Fatal("nil channel")
	} else if _, ok := <-ch3; ok {
		t.Fatal("subscription after Close is open")
	}
}

func TestMonitorStartTwice(t *testing.T) {
	f := newMonFixture(t, nil)
	if err := f.m.Start(context.Background()); err == nil {
		t.Fatal("second Start accepted")
	}
}

// TestMonitorWaitFirstReadings: WaitFirstReadings returns once every
// instrument has been read, and then the cache holds every channel, with
// no comms_loss from EvaluateTrips (what recovery judges at start); while an
// instrument never answers it waits until its context ends.
func TestMonitorWaitFirstReadings(t *testing.T) {
	f := newMonFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), monitorGuard)
	defer cancel()
	if err := f.m.WaitFirstReadings(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ev := range f.m.env.EvaluateTrips(f.m.Readings()) {
		if ev.Trip == TripCommsLoss {
			t.Fatalf("comms_loss after the first readings: %+v", ev)
		}
	}

	g := newMonFixture(t, func(r *Rig, p *plant) { r.Gauge = blockingGauge{fakeGauge{p}} })
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := g.m.WaitFirstReadings(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with a gauge that never answers: %v", err)
	}
}
