package envelope

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// safeReadings is a rig at rest under vacuum, ready for anything: 0.5 mbar,
// no gas, valves closed, scrubber on, door closed, exhaust OK, furnace cold.
func safeReadings(now time.Time) Readings {
	at := now.Add(-100 * time.Millisecond)
	r := Readings{
		At: now,
		Furnace: device.FurnaceStatus{ProcessValue: device.Celsius(25), Setpoint: device.Celsius(25),
			WorkingSetpoint: device.Celsius(25), RampRate: 5, At: at},
		Pressure: device.PressureReading{Pressure: 0.5 * device.Millibar, Status: device.GaugeOK, At: at},
		Flows:    map[string]device.FlowStatus{},
		Switches: map[string]Level{},
		Inputs:   map[string]Level{},
	}
	for _, g := range SimRigSpec().Gases {
		r.Flows[g.Gas] = device.FlowStatus{Gas: g.Gas, At: at}
	}
	for _, s := range SimRigSpec().Switches {
		r.Switches[s.Name] = Level{On: s.Name == "scrubber", At: at}
	}
	for _, in := range SimRigSpec().Inputs {
		r.Inputs[in] = Level{On: in == "door_closed" || in == "exhaust_ok", At: at}
	}
	return r
}

func setFlow(r *Readings, gas string, f device.Flow) {
	st := r.Flows[gas]
	st.Flow, st.Setpoint = f, f
	r.Flows[gas] = st
}

func setSwitch(r *Readings, name string, on bool) { r.Switches[name] = Level{On: on, At: r.At} }
func setInput(r *Readings, name string, on bool)  { r.Inputs[name] = Level{On: on, At: r.At} }

type checkCase struct {
	name   string
	action Action
	setup  func(r *Readings, s *State)
	rule   Rule    // "" = accepted
	limit  float64 // checked when unit != ""
	value  float64
	unit   string
}

func runChecks(t *testing.T, tests []checkCase) {
	t.Helper()
	runEnvChecks(t, testEnvelope(t), tests)
}

// runEnvChecks runs each case's action against env from the safe readings
// (after its setup): accepted, or refused with a *Violation of its rule on
// its channel, limit and value when a unit is given, and a message naming
// both.
func runEnvChecks(t *testing.T, env *Envelope, tests []checkCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := safeReadings(t0)
			s := NewState()
			if tt.setup != nil {
				tt.setup(&r, s)
			}
			err := env.Check(tt.action, r, s)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var v *Violation
			if !errors.As(err, &v) || !errors.Is(err, ErrViolation) {
				t.Fatalf("want a *Violation %s, got %v", tt.rule, err)
			}
			if v.Rule != tt.rule || v.Channel != tt.action.Channel() {
				t.Fatalf("got rule %s on %s, want %s on %s: %v", v.Rule, v.Channel, tt.rule, tt.action.Channel(), v)
			}
			if tt.unit != "" && (v.Unit != tt.unit || !closeTo(v.Limit, tt.limit) || !closeTo(v.Value, tt.value)) {
				t.Fatalf("got limit %v value %v %s, want %v %v %s", v.Limit, v.Value, v.Unit, tt.limit, tt.value, tt.unit)
			}
			if !strings.Contains(v.Error(), string(tt.rule)) || !strings.Contains(v.Error(), v.Channel) {
				t.Fatalf("message %q does not name rule and channel", v.Error())
			}
		})
	}
}

func closeTo(a, b float64) bool { return a == b || math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestHardLimits(t *testing.T) {
	heaterOnAtmosphere := func(r *Readings, _ *State) {}
	runChecks(t, []checkCase{
		{"setpoint at max", SetpointAction(device.Celsius(1000)), heaterOnAtmosphere, "", 0, 0, ""},
		{"setpoint beyond max", SetpointAction(device.Celsius(1000.01)), nil, RuleMax, 1000, 1000.01, "celsius"},
		{"setpoint at min", SetpointAction(device.Celsius(0)), nil, "", 0, 0, ""},
		{"setpoint below min", SetpointAction(device.Celsius(-0.01)), nil, RuleMin, 0, -0.01, "celsius"},
		{"setpoint in kelvin beyond max", SetpointAction(device.Kelvin(1273.16)), nil, RuleMax, 1000, 1000.01, "celsius"},
		{"ramp at min", RampRateAction(0.5), nil, "", 0, 0, ""},
		{"ramp zero means unlimited: refused", RampRateAction(0), nil, RuleMin, 0.5, 0, "celsius_per_minute"},
		{"ramp at max", RampRateAction(20), nil, "", 0, 0, ""},
		{"ramp beyond max", RampRateAction(20.01), nil, RuleMax, 20, 20.01, "celsius_per_minute"},
		{"Ar at max (0.5 slm)", FlowAction("Ar", device.SCCM(500)), nil, "", 0, 0, ""},
		{"Ar beyond max, reported in slm", FlowAction("Ar", device.SCCM(500.1)), nil, RuleMax, 0.5, 0.5001, "slm"},
		{"H2S at max", FlowAction("H2S", device.SCCM(20)), nil, "", 0, 0, ""},
		{"H2S beyond max", FlowAction("H2S", device.SCCM(20.01)), nil, RuleMax, 20, 20.01, "sccm"},
		{"negative flow", FlowAction("H2", device.SCCM(-0.01)), nil, RuleMin, 0, -0.01, "sccm"},
		{"integration at min", AcquireAction(10 * time.Millisecond), nil, "", 0, 0, ""},
		{"integration below min", AcquireAction(9 * time.Millisecond), nil, RuleMin, 10, 9, "ms"},
		{"integration at max", AcquireAction(30 * time.Second), nil, "", 0, 0, ""},
		{"integration beyond max", AcquireAction(30*time.Second + time.Millisecond), nil, RuleMax, 30000, 30001, "ms"},
		{"NaN setpoint", SetpointAction(device.Temperature(math.NaN())), nil, RuleNotFinite, 0, 0, ""},
		{"infinite flow", FlowAction("Ar", device.Flow(math.Inf(1))), nil, RuleNotFinite, 0, 0, ""},
		{"unknown gas", FlowAction("Cl2", 1), nil, RuleUnknownChannel, 0, 0, ""},
		{"unknown switch", SwitchAction("fan", true), nil, RuleUnknownChannel, 0, 0, ""},
		{"zero action", Action{}, nil, RuleUnknownChannel, 0, 0, ""},
		{"relay is the interlock's", SwitchAction("relay", true), nil, RuleInterlockOwned, 0, 0, ""},
		{"relay off too", SwitchAction("relay", false), nil, RuleInterlockOwned, 0, 0, ""},
	})
}

func TestRateOfChange(t *testing.T) {
	last := func(v float64, ago time.Duration) func(*Readings, *State) {
		return func(r *Readings, s *State) {
			s.last[FlowChannel("H2S")] = stamp{value: v, at: r.At.Add(-ago)}
		}
	}
	runChecks(t, []checkCase{
		{"no history", FlowAction("H2S", 20), nil, "", 0, 0, ""},
		{"at the rate", FlowAction("H2S", 10), last(0, 10*time.Second), "", 0, 0, ""},
		{"beyond the rate", FlowAction("H2S", 10.1), last(0, 10*time.Second), RuleRate, 60, 60.6, "sccm/min"},
		{"down beyond the rate", FlowAction("H2S", 1), last(12, 10*time.Second), RuleRate, 60, 66, "sccm/min"},
		{"same instant", FlowAction("H2S", 5), last(4, 0), RuleRate, 60, math.Inf(1), "sccm/min"},
		{"unchanged value always passes", FlowAction("H2S", 4), last(4, 0), "", 0, 0, ""},
	})
}

func TestHeaterInterlock(t *testing.T) {
	atPressure := func(p device.Pressure) func(*Readings, *State) {
		return func(r *Readings, _ *State) { r.Pressure.Pressure = p }
	}
	atmosphereWithAr := func(f device.Flow) func(*Readings, *State) {
		return func(r *Readings, _ *State) {
			r.Pressure.Pressure = device.Atmosphere
			setFlow(r, "Ar", f)
		}
	}
	runChecks(t, []checkCase{
		{"vacuum at the limit", HeaterAction(true), atPressure(1 * device.Millibar), "", 0, 0, ""},
		{"just above the vacuum limit", HeaterAction(true), atPressure(1.01 * device.Millibar), RuleHeater, 1, 1.01, "mbar"},
		{"inert flow at the limit", HeaterAction(true), atmosphereWithAr(50), "", 0, 0, ""},
		{"inert flow just below", HeaterAction(true), atmosphereWithAr(49.9), RuleHeater, 1, 1013.25, "mbar"},
		{"gauge sensor error, no Ar", HeaterAction(true), func(r *Readings, _ *State) { r.Pressure.Status = device.GaugeSensorError }, RuleStale, 0, 0, ""},
		{"gauge sensor error, Ar flowing", HeaterAction(true), func(r *Readings, _ *State) {
			r.Pressure.Status = device.GaugeSensorError
			setFlow(r, "Ar", 100)
		}, "", 0, 0, ""},
		{"stale pressure and Ar", HeaterAction(true), func(r *Readings, _ *State) {
			r.Pressure.At = r.At.Add(-3 * time.Second)
			r.Flows["Ar"] = device.FlowStatus{}
		}, RuleStale, 0, 0, ""},
		{"underrange is vacuum", HeaterAction(true), func(r *Readings, _ *State) {
			r.Pressure = device.PressureReading{Pressure: 5e-9 * device.Millibar, Status: device.GaugeUnderrange, At: r.At}
		}, "", 0, 0, ""},
		{"raising the setpoint with the heater on at atmosphere", SetpointAction(device.Celsius(700)), func(r *Readings, _ *State) {
			r.Furnace.HeaterEnabled = true
			r.Pressure.Pressure = device.Atmosphere
		}, RuleHeater, 1, 1013.25, "mbar"},
		{"lowering the setpoint with the heater on at atmosphere", SetpointAction(device.Celsius(20)), func(r *Readings, _ *State) {
			r.Furnace.HeaterEnabled = true
			r.Pressure.Pressure = device.Atmosphere
		}, "", 0, 0, ""},
		{"raising the setpoint with the heater off", SetpointAction(device.Celsius(700)), func(r *Readings, _ *State) {
			r.Pressure.Pressure = device.Atmosphere
		}, "", 0, 0, ""},
		{"setpoint with the furnace unread needs the heater condition", SetpointAction(device.Celsius(700)), func(r *Readings, _ *State) {
			r.Furnace = device.FurnaceStatus{}
			r.Pressure.Pressure = device.Atmosphere
		}, RuleHeater, 0, 0, ""},
	})
}

func TestGasInterlocks(t *testing.T) {
	h2sValve := SwitchAction("h2s_valve", true)
	runChecks(t, []checkCase{
		{"all conditions hold", h2sValve, nil, "", 0, 0, ""},
		{"flow, all conditions hold", FlowAction("H2S", 5), nil, "", 0, 0, ""},
		{"pressure at the limit", h2sValve, func(r *Readings, _ *State) { r.Pressure.Pressure = 10 * device.Millibar }, "", 0, 0, ""},
		{"pressure just beyond", h2sValve, func(r *Readings, _ *State) { r.Pressure.Pressure = 10.01 * device.Millibar }, RuleGasPressure, 10, 10.01, "mbar"},
		{"flow with pressure beyond", FlowAction("H2S", 5), func(r *Readings, _ *State) { r.Pressure.Pressure = device.Atmosphere }, RuleGasPressure, 10, 1013.25, "mbar"},
		{"scrubber off", h2sValve, func(r *Readings, _ *State) { setSwitch(r, "scrubber", false) }, RuleGasSwitch, 0, 0, ""},
		{"scrubber unread", h2sValve, func(r *Readings, _ *State) { delete(r.Switches, "scrubber") }, RuleStale, 0, 0, ""},
		{"door open", h2sValve, func(r *Readings, _ *State) { setInput(r, "door_closed", false) }, RuleGasInput, 0, 0, ""},
		{"exhaust not OK", h2sValve, func(r *Readings, _ *State) { setInput(r, "exhaust_ok", false) }, RuleGasInput, 0, 0, ""},
		{"leak detected", h2sValve, func(r *Readings, _ *State) { setInput(r, "leak_detected", true) }, RuleGasInput, 0, 0, ""},
		{"door reading stale", h2sValve, func(r *Readings, _ *State) {
			r.Inputs["door_closed"] = Level{On: true, At: r.At.Add(-5 * time.Second)}
		}, RuleStale, 0, 0, ""},
		{"closing the valve needs nothing", SwitchAction("h2s_valve", false), func(r *Readings, _ *State) { *r = Readings{At: r.At} }, "", 0, 0, ""},
		{"zero flow needs nothing", FlowAction("H2S", 0), func(r *Readings, _ *State) { *r = Readings{At: r.At} }, "", 0, 0, ""},
		{"scrubber off while H2S flows", SwitchAction("scrubber", false), func(r *Readings, _ *State) { setFlow(r, "H2S", 5) }, RuleRequiredOutput, 0, 0, ""},
		{"scrubber off while the H2S valve is open", SwitchAction("scrubber", false), func(r *Readings, _ *State) { setSwitch(r, "h2s_valve", true) }, RuleRequiredOutput, 0, 0, ""},
		{"scrubber off with no H2S", SwitchAction("scrubber", false), nil, "", 0, 0, ""},
		{"scrubber on is its safe state", SwitchAction("scrubber", true), func(r *Readings, _ *State) { *r = Readings{At: r.At} }, "", 0, 0, ""},
		{"flow noise is not flowing", SwitchAction("scrubber", false), func(r *Readings, _ *State) { setFlow(r, "H2S", 0.3) }, "", 0, 0, ""},
		{"H2 door open", FlowAction("H2", 10), func(r *Readings, _ *State) { setInput(r, "door_closed", false) }, RuleGasInput, 0, 0, ""},
		{"Ar is free", SwitchAction("ar_valve", true), func(r *Readings, _ *State) { r.Pressure.Pressure = device.Atmosphere }, "", 0, 0, ""},
	})
}

func TestMixingWithoutPurge(t *testing.T) {
	runChecks(t, []checkCase{
		{"H2 flowing", SwitchAction("h2s_valve", true), func(r *Readings, _ *State) { setFlow(r, "H2", 10) }, RuleMixing, 0, 0, ""},
		{"H2 line open", FlowAction("H2S", 5), func(r *Readings, _ *State) { setSwitch(r, "h2_valve", true) }, RuleMixing, 0, 0, ""},
		{"H2 used, no purge since", FlowAction("H2S", 5), func(r *Readings, s *State) { s.used["H2"] = r.At.Add(-time.Hour) }, RuleMixing, 0, 0, ""},
		{"H2 reading stale", FlowAction("H2S", 5), func(r *Readings, _ *State) { delete(r.Flows, "H2") }, RuleStale, 0, 0, ""},
		{"Ar with H2 is no mixing", SwitchAction("ar_valve", true), func(r *Readings, _ *State) { setFlow(r, "H2", 10) }, "", 0, 0, ""},
		{"H2S again after H2S", FlowAction("H2S", 5), func(r *Readings, s *State) { s.used["H2S"] = r.At }, "", 0, 0, ""},
	})
}

func TestPurgeClearsMixing(t *testing.T) {
	env := testEnvelope(t)
	s := NewState()
	r := safeReadings(t0)
	setFlow(&r, "H2", 20)
	env.Observe(s, r)
	if got := s.UsedSincePurge(); len(got) != 1 || got[0] != "H2" {
		t.Fatalf("used %v", got)
	}
	step := func(at time.Time, ar device.Flow, p device.Pressure) Readings {
		r := safeReadings(at)
		setFlow(&r, "Ar", ar)
		r.Pressure.Pressure = p
		env.Observe(s, r)
		return r
	}
	// Ar at 100 sccm at atmosphere for 1 min 59 s: not yet a purge.
	step(t0.Add(time.Second), 100, device.Atmosphere)
	r = step(t0.Add(2*time.Minute), 100, device.Atmosphere) // 1 min 59 s after the start
	if err := env.Check(FlowAction("H2S", 5), withVacuum(r), s); !errors.Is(err, ErrViolation) {
		t.Fatalf("before the purge completed: %v", err)
	}
	// An interruption restarts the purge clock.
	step(t0.Add(2*time.Minute+time.Second), 10, device.Atmosphere)
	step(t0.Add(3*time.Minute), 100, device.Atmosphere)
	r = step(t0.Add(4*time.Minute+59*time.Second), 100, device.Atmosphere)
	if len(s.UsedSincePurge()) == 0 {
		t.Fatal("an interrupted purge counted")
	}
	r = step(t0.Add(5*time.Minute), 100, device.Atmosphere)
	if len(s.UsedSincePurge()) != 0 || s.LastPurge().IsZero() {
		t.Fatalf("purge not recognised: used %v", s.UsedSincePurge())
	}
	if err := env.Check(FlowAction("H2S", 5), withVacuum(r), s); err != nil {
		t.Fatalf("after the purge: %v", err)
	}
	// Pumping down below 0.01 mbar counts as a purge too.
	s2 := NewState()
	s2.used["H2"] = t0
	for i := range 3 {
		r := safeReadings(t0.Add(time.Duration(i) * time.Minute))
		r.Pressure.Pressure = 0.005 * device.Millibar
		env.Observe(s2, r)
	}
	if len(s2.UsedSincePurge()) != 0 {
		t.Fatal("pump-down purge not recognised")
	}
}

func withVacuum(r Readings) Readings {
	r.Pressure.Pressure = 0.5 * device.Millibar
	setFlow(&r, "Ar", 0)
	return r
}

func TestAcceptRecordsHistory(t *testing.T) {
	env := testEnvelope(t)
	s := NewState()
	env.Accept(s, FlowAction("H2", 10), t0)
	env.Accept(s, SwitchAction("ar_valve", true), t0)
	if v, at, ok := s.Last(FlowChannel("H2")); !ok || v != 10 || !at.Equal(t0) {
		t.Fatalf("last %v %v %v", v, at, ok)
	}
	if got := s.UsedSincePurge(); len(got) != 1 || got[0] != "H2" {
		t.Fatalf("used %v (Ar is not reactive)", got)
	}
}

func TestVenting(t *testing.T) {
	vent := SwitchAction("vent_valve", true)
	runChecks(t, []checkCase{
		{"cold and idle", vent, nil, "", 0, 0, ""},
		{"at the temperature limit", vent, func(r *Readings, _ *State) { r.Furnace.ProcessValue = device.Celsius(80) }, "", 0, 0, ""},
		{"just above it", vent, func(r *Readings, _ *State) { r.Furnace.ProcessValue = device.Celsius(80.1) }, RuleVentHot, 80, 80.1, "celsius"},
		{"heater enabled", vent, func(r *Readings, _ *State) { r.Furnace.HeaterEnabled = true }, RuleVentHot, 0, 0, ""},
		{"thermocouple open", vent, func(r *Readings, _ *State) { r.Furnace.Alarms |= device.AlarmSensorBreak }, RuleStale, 0, 0, ""},
		{"H2 flowing", vent, func(r *Readings, _ *State) { setFlow(r, "H2", 5) }, RuleVentGas, 0, 0, ""},
		{"H2S line open", vent, func(r *Readings, _ *State) { setSwitch(r, "h2s_valve", true) }, RuleVentGas, 0, 0, ""},
		{"gate valve open", vent, func(r *Readings, _ *State) { setSwitch(r, "gate_valve", true) }, RuleVentPumping, 0, 0, ""},
		{"gate valve with the vent open", SwitchAction("gate_valve", true), func(r *Readings, _ *State) { setSwitch(r, "vent_valve", true) }, RuleVentPumping, 0, 0, ""},
		{"gate valve with the vent closed", SwitchAction("gate_valve", true), nil, "", 0, 0, ""},
		{"closing the vent always", SwitchAction("vent_valve", false), func(r *Readings, _ *State) { *r = Readings{At: r.At} }, "", 0, 0, ""},
	})
}

func TestCheckIsPure(t *testing.T) {
	env := testEnvelope(t)
	r := safeReadings(t0)
	s := NewState()
	_ = env.Check(FlowAction("H2", 10), r, s)
	if len(s.last) != 0 || len(s.used) != 0 {
		t.Fatal("Check changed the state")
	}
}

func TestEvaluateTrips(t *testing.T) {
	env := testEnvelope(t)
	tests := []struct {
		name  string
		setup func(r *Readings)
		want  Trip
		proc  Procedure
	}{
		{"over temperature", func(r *Readings) { r.Furnace.ProcessValue = device.Celsius(1050.1) }, TripOverTemperature, ProcImmediateShutdown},
		{"thermocouple open", func(r *Readings) { r.Furnace.Alarms = device.AlarmSensorBreak }, TripOverTemperature, ProcImmediateShutdown},
		{"over pressure in process", func(r *Readings) { r.Pressure.Pressure = 901 * device.Millibar; setFlow(r, "Ar", 100) }, TripOverPressure, ProcImmediateShutdown},
		{"gauge overrange in process", func(r *Readings) { r.Pressure.Status = device.GaugeOverrange; setFlow(r, "Ar", 100) }, TripOverPressure, ProcImmediateShutdown},
		{"gas leak", func(r *Readings) { setInput(r, "leak_detected", true) }, TripGasLeak, ProcCloseValvesAndAlert},
		{"e-stop", func(r *Readings) { setInput(r, "estop_pressed", true) }, TripEStop, ProcSafeState},
		{"furnace silent", func(r *Readings) { r.Furnace.At = r.At.Add(-4 * time.Second) }, TripCommsLoss, ProcSafeState},
		{"MFC never read", func(r *Readings) { delete(r.Flows, "H2S") }, TripCommsLoss, ProcSafeState},
		{"switch silent", func(r *Readings) { r.Switches["pump"] = Level{At: r.At.Add(-time.Minute)} }, TripCommsLoss, ProcSafeState},
	}
	if got := env.EvaluateTrips(safeReadings(t0)); len(got) != 0 {
		t.Fatalf("a rig at rest trips: %+v", got)
	}
	r := safeReadings(t0)
	r.Furnace.ProcessValue = device.Celsius(1050)
	if got := env.EvaluateTrips(r); len(got) != 0 {
		t.Fatalf("at the limit trips: %+v", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := safeReadings(t0)
			tt.setup(&r)
			got := env.EvaluateTrips(r)
			if len(got) != 1 || got[0].Trip != tt.want || got[0].Procedure != tt.proc {
				t.Fatalf("got %+v, want %s -> %s", got, tt.want, tt.proc)
			}
		})
	}
}
