package envelope

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
)

// h2sInUse is safeReadings with the H2S line open and 10 sccm flowing
// (scrubber on, door closed, exhaust OK).
func h2sInUse(now time.Time) Readings {
	r := safeReadings(now)
	setSwitch(&r, "h2s_valve", true)
	setFlow(&r, "H2S", 10)
	return r
}

// TestEvaluateTripsGasInterlockLost: a gas in use whose interlock's output
// (the scrubber) reads off, or whose required input (exhaust_ok,
// door_closed) reads the other level, trips gas_interlock_lost, whose
// procedure closes the gas lines; with the gas closed nothing trips, and a
// reading past the comms timeout is a comms loss, not evidence of a level.
func TestEvaluateTripsGasInterlockLost(t *testing.T) {
	env := testEnvelope(t)
	if got := env.EvaluateTrips(h2sInUse(t0)); len(got) != 0 {
		t.Fatalf("H2S flowing with its interlock held trips: %+v", got)
	}
	tests := []struct {
		name    string
		setup   func(r *Readings)
		channel string // "": no trip
		reason  string
	}{
		{"scrubber drops while H2S flows", func(r *Readings) { setSwitch(r, "scrubber", false) },
			"switch.scrubber", "H2S in use (flowing, h2s_valve open) while scrubber, which its interlock requires on, reads off"},
		{"exhaust_ok drops while H2S flows", func(r *Readings) { setInput(r, "exhaust_ok", false) },
			"input.exhaust_ok", "H2S in use (flowing, h2s_valve open) while input exhaust_ok reads false, its interlock requires true"},
		{"door opens while H2S flows", func(r *Readings) { setInput(r, "door_closed", false) },
			"input.door_closed", "its interlock requires true"},
		{"valve open, no flow yet", func(r *Readings) { setFlow(r, "H2S", 0); setSwitch(r, "scrubber", false) },
			"switch.scrubber", "(h2s_valve open)"},
		{"flowing with the valve read closed", func(r *Readings) {
			setSwitch(r, "h2s_valve", false)
			setSwitch(r, "scrubber", false)
		}, "switch.scrubber", "(flowing)"},
		{"scrubber read off 2.5 s ago (past max_reading_age, within comms_timeout)", func(r *Readings) {
			r.Switches["scrubber"] = Level{On: false, At: r.At.Add(-2500 * time.Millisecond)}
		}, "switch.scrubber", "reads off"},
		{"H2S line closed: the scrubber may be off", func(r *Readings) {
			setSwitch(r, "h2s_valve", false)
			setFlow(r, "H2S", 0)
			setSwitch(r, "scrubber", false)
			setInput(r, "exhaust_ok", false)
		}, "", ""},
		{"H2S below flow_on_threshold, valve closed", func(r *Readings) {
			setSwitch(r, "h2s_valve", false)
			setFlow(r, "H2S", 0.5)
			setSwitch(r, "scrubber", false)
		}, "", ""},
		{"H2 in use: its interlock does not need the scrubber", func(r *Readings) {
			setSwitch(r, "h2s_valve", false)
			setFlow(r, "H2S", 0)
			setSwitch(r, "h2_valve", true)
			setFlow(r, "H2", 20)
			setSwitch(r, "scrubber", false)
			setInput(r, "exhaust_ok", false)
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h2sInUse(t0)
			tt.setup(&r)
			got := env.EvaluateTrips(r)
			if tt.channel == "" {
				if len(got) != 0 {
					t.Fatalf("tripped: %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Trip != TripGasInterlockLost || got[0].Procedure != ProcCloseValvesAndAlert ||
				got[0].Channel != tt.channel || !got[0].At.Equal(r.At) {
				t.Fatalf("got %+v, want %s on %s -> %s", got, TripGasInterlockLost, tt.channel, ProcCloseValvesAndAlert)
			}
			if !strings.Contains(got[0].Reason, tt.reason) {
				t.Fatalf("reason %q, want it to say %q", got[0].Reason, tt.reason)
			}
		})
	}

	// H2 in use with the door opened: H2's interlock requires it closed too.
	r := safeReadings(t0)
	setSwitch(&r, "h2_valve", true)
	setFlow(&r, "H2", 20)
	setInput(&r, "door_closed", false)
	if got := env.EvaluateTrips(r); len(got) != 1 || got[0].Trip != TripGasInterlockLost || got[0].Channel != "input.door_closed" ||
		!strings.HasPrefix(got[0].Reason, "H2 in use") {
		t.Fatalf("H2 with the door open: %+v", got)
	}
	// Both lines lose their interlock: one event per line (the monitor runs
	// the procedure once per trip kind).
	r = h2sInUse(t0)
	setSwitch(&r, "h2_valve", true)
	setFlow(&r, "H2", 20)
	setInput(&r, "door_closed", false)
	if got := env.EvaluateTrips(r); len(got) != 2 || got[0].Trip != TripGasInterlockLost || got[1].Trip != TripGasInterlockLost {
		t.Fatalf("two lines: %+v", got)
	}
}

// TestGasInterlockLostFailsClosedOnStaleData: a scrubber, exhaust input or
// H2S reading past the comms timeout is no evidence either way: it trips
// comms_loss (safe_state: every line closed), never nothing.
func TestGasInterlockLostFailsClosedOnStaleData(t *testing.T) {
	env := testEnvelope(t)
	old := func(r *Readings) time.Time { return r.At.Add(-4 * time.Second) }
	for name, setup := range map[string]func(r *Readings){
		"scrubber silent":     func(r *Readings) { r.Switches["scrubber"] = Level{On: true, At: old(r)} },
		"scrubber never read": func(r *Readings) { delete(r.Switches, "scrubber") },
		"exhaust_ok silent":   func(r *Readings) { r.Inputs["exhaust_ok"] = Level{On: true, At: old(r)} },
		"H2S MFC and valve silent, scrubber off": func(r *Readings) {
			f := r.Flows["H2S"]
			f.At = old(r)
			r.Flows["H2S"] = f
			r.Switches["h2s_valve"] = Level{On: true, At: old(r)}
			setSwitch(r, "scrubber", false)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := h2sInUse(t0)
			setup(&r)
			got := env.EvaluateTrips(r)
			if len(got) == 0 || !slices.ContainsFunc(got, func(ev TripEvent) bool { return ev.Trip == TripCommsLoss }) {
				t.Fatalf("stale reading did not trip comms_loss: %+v", got)
			}
			if env.Procedure(TripCommsLoss) != ProcSafeState {
				t.Fatalf("comms_loss runs %s", env.Procedure(TripCommsLoss))
			}
		})
	}
}

// TestGasInterlockLostLeavesTripInputsToTheirTrips: H2S's interlock
// requires leak_detected false, but a leak is gas_leak_detected's: one trip,
// not two.
func TestGasInterlockLostLeavesTripInputsToTheirTrips(t *testing.T) {
	env := testEnvelope(t)
	r := h2sInUse(t0)
	setInput(&r, "leak_detected", true)
	if got := env.EvaluateTrips(r); len(got) != 1 || got[0].Trip != TripGasLeak {
		t.Fatalf("leak while H2S flows: %+v", got)
	}
}

// TestGasInterlockLostProcedure: the procedure defaults to
// close_all_valves_and_alert (an envelope written before the trip compiles
// unchanged); a configured one is taken, an unknown one refused.
func TestGasInterlockLostProcedure(t *testing.T) {
	if p := testEnvelope(t).Procedure(TripGasInterlockLost); p != ProcCloseValvesAndAlert {
		t.Fatalf("default procedure %s", p)
	}
	cfg := loadTestConfig(t)
	cfg.EmergencyProcedures["gas_interlock_lost"] = "immediate_shutdown"
	env, err := Compile(cfg, SimRigSpec())
	if err != nil {
		t.Fatal(err)
	}
	if p := env.Procedure(TripGasInterlockLost); p != ProcImmediateShutdown {
		t.Fatalf("configured procedure ignored: %s", p)
	}
	cfg.EmergencyProcedures["gas_interlock_lost"] = "open_the_windows"
	_, err = Compile(cfg, SimRigSpec())
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "emergency_procedures.gas_interlock_lost") {
		t.Fatalf("unknown procedure: %v", err)
	}
	// The other trips still need theirs.
	cfg = loadTestConfig(t)
	delete(cfg.EmergencyProcedures, "gas_leak_detected")
	if _, err := Compile(cfg, SimRigSpec()); err == nil || !strings.Contains(err.Error(), "emergency_procedures.gas_leak_detected: missing") {
		t.Fatalf("missing gas_leak_detected: %v", err)
	}
}

// TestMonitorPollsHeldLines: the outputs and inputs gas_interlock_lost
// reads (the scrubber, exhaust_ok, door_closed) and the lines it watches
// are polled at the monitor's rate.
func TestMonitorPollsHeldLines(t *testing.T) {
	f := newMonFixture(t, nil)
	every := map[string]time.Duration{}
	for _, p := range f.m.pollers() {
		for _, n := range p.healthNames() {
			every[n] = p.every
		}
	}
	for _, n := range []string{"switch.scrubber", "input.exhaust_ok", "input.door_closed", "switch.h2s_valve", "flow.H2S"} {
		if d, ok := every[n]; !ok || d != fastMonitorOpts().OtherEvery {
			t.Errorf("%s polled every %v (polled: %v), want %v", n, d, ok, fastMonitorOpts().OtherEvery)
		}
	}
}

// TestMonitorClosesH2SWhenTheScrubberDrops: H2S flows with the scrubber
// on; the scrubber goes off by itself (not through the interlock): the
// monitor trips gas_interlock_lost, closes the gas lines (flows to zero,
// valves closed), latches, audits; the heater is left alone. Once the line
// is closed the condition is gone and the operator may reset.
func TestMonitorClosesH2SWhenTheScrubberDrops(t *testing.T) {
	f := newMonFixture(t, nil)
	waitFor(t, "healthy", f.allHealthy)
	f.set(func(p *plant) {
		p.switches["h2s_valve"] = true
		p.flows["H2S"] = device.FlowStatus{Gas: "H2S", Flow: 10, Setpoint: 10}
		p.furnace.HeaterEnabled = true
	})
	f.settle(5)
	if n := len(f.tripped()); n != 0 {
		t.Fatalf("H2S flowing with the scrubber on tripped: %+v", f.tripped())
	}
	f.set(func(p *plant) { p.switches["scrubber"] = false })
	waitFor(t, "gas_interlock_lost", func() bool { return len(f.tripped()) == 1 })
	e := f.tripped()[0]
	if e.Trip != TripGasInterlockLost || e.Rule != Rule(ProcCloseValvesAndAlert) || !strings.Contains(e.Reason, "scrubber") {
		t.Fatalf("entry %+v", e)
	}
	if latched, why := f.il.Latched(); !latched || why != string(TripGasInterlockLost) {
		t.Fatalf("latched %v %q", latched, why)
	}
	waitFor(t, "H2S closed", func() bool {
		f.p.mu.Lock()
		defer f.p.mu.Unlock()
		return !f.p.switches["h2s_valve"] && f.p.flows["H2S"].Setpoint == 0
	})
	if n := f.halted("furnace"); n != 0 {
		t.Fatalf("close_all_valves_and_alert halted the furnace %d times", n)
	}
	// The H2S line may not be opened again while latched.
	if _, err := f.il.apply(context.Background(), "ok", SwitchAction("h2s_valve", true)); !errors.Is(err, ErrViolation) {
		t.Fatalf("apply while latched: %v", err)
	}
	// The line is closed: the condition is gone, the operator resets; the
	// interlock still refuses H2S while the scrubber is off.
	f.set(func(p *plant) { p.flows["H2S"] = device.FlowStatus{Gas: "H2S"} })
	waitFor(t, "H2S reads closed", func() bool {
		r := f.m.Readings()
		return !r.Switches["h2s_valve"].On && r.Flows["H2S"].Flow == 0
	})
	if err := f.il.Reset(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	var v *Violation
	if _, err := f.il.apply(context.Background(), "ok", SwitchAction("h2s_valve", true)); !errors.As(err, &v) || v.Rule != RuleGasSwitch {
		t.Fatalf("H2S with the scrubber off: %v", err)
	}
	if n := len(f.tripped()); n != 1 {
		t.Fatalf("%d trips audited for one onset", n)
	}
}

// BenchmarkEvaluateTripsH2SInUse is BenchmarkEvaluateTrips with H2S in use
// and its interlock held: gas_interlock_lost's whole work at every poll
// (the idle rig's is two map look-ups per held line).
func BenchmarkEvaluateTripsH2SInUse(b *testing.B) {
	env := testEnvelope(b)
	r := h2sInUse(t0)
	b.ReportAllocs()
	for b.Loop() {
		if len(env.EvaluateTrips(r)) != 0 {
			b.Fatal("trip")
		}
	}
}
