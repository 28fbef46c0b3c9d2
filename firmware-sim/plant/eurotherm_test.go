package plant

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

// These tests hold the Eurotherm 3200 model to configs/manuals/eurotherm-3200.md.

func newEuro(t *testing.T, relay bool) (*Plant, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayEnergised: relay, Now: clk.Now, MaxWrites: 100000, FurnaceModel: FurnaceEurotherm3200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, clk
}

func euroW(t *testing.T, p *Plant, addr int, vals ...uint16) {
	t.Helper()
	if err := p.EurothermWrite("tcp", addr, vals); err != nil {
		t.Fatalf("write %d %v: %v", addr, vals, err)
	}
}

func euroR(t *testing.T, p *Plant, addr int) uint16 {
	t.Helper()
	v := make([]uint16, 1)
	if err := p.EurothermRead(addr, v); err != nil {
		t.Fatalf("read %d: %v", addr, err)
	}
	return v[0]
}

func euroFloat(t *testing.T, p *Plant, addr int) float32 {
	t.Helper()
	v := make([]uint16, 2)
	if err := p.EurothermRead(EuroFloatBase+2*addr, v); err != nil {
		t.Fatalf("read float %d: %v", addr, err)
	}
	return math.Float32frombits(uint32(v[0])<<16 | uint32(v[1]))
}

func floatWords(f float32) []uint16 {
	b := math.Float32bits(f)
	return []uint16{uint16(b >> 16), uint16(b)}
}

// auto puts the controller in auto heating to sp (0.1 °C) at rate (0.1 °C/min).
func auto(t *testing.T, p *Plant, sp, rate uint16) {
	t.Helper()
	euroW(t, p, EuroSPRate, rate)
	euroW(t, p, EuroTargetSP, sp)
	euroW(t, p, EuroAutoManual, 0)
}

func TestEurothermPowersUpManualWithOutputOff(t *testing.T) {
	p, _ := newEuro(t, true)
	if got := euroR(t, p, EuroAutoManual); got != 1 {
		t.Fatalf("A-M %d at power-on, want 1 (manual)", got)
	}
	if st := euroR(t, p, EuroStatus); st&EuroStManual == 0 {
		t.Fatalf("status %#x: manual bit 4 not set", st)
	}
	euroW(t, p, EuroTargetSP, 7000) // a setpoint alone does not heat in manual/0
	p.Step(20 * time.Minute)
	if op := euroR(t, p, EuroWorkingOP); op != 0 {
		t.Fatalf("working output %d in manual with MAN.OP 0", op)
	}
	if tc := p.FurnaceTemperature(); tc > AmbientC+0.5 {
		t.Fatalf("furnace at %.1f °C with the output off", tc)
	}
	if s := p.Snapshot(); s.Furnace.HeaterActive || s.Furnace.HeaterEnable {
		t.Fatalf("snapshot heater enable %t active %t, want both false", s.Furnace.HeaterEnable, s.Furnace.HeaterActive)
	}
}

func TestEurothermRampsAndHeatsInAuto(t *testing.T) {
	p, _ := newEuro(t, true)
	auto(t, p, 7000, 100) // 700 °C at 10 °C/min
	p.Step(10 * time.Minute)
	wsp := float64(int16(euroR(t, p, EuroWorkingSP))) / 10
	if want := AmbientC + 100; math.Abs(wsp-want) > 0.5 {
		t.Fatalf("working setpoint %.1f after 10 min at 10 °C/min, want %.1f", wsp, want)
	}
	if st := euroR(t, p, EuroStatus); st&EuroStRampRunning == 0 || st&EuroStManual != 0 {
		t.Fatalf("status %#x while ramping in auto: want bit 13, not bit 4", st)
	}
	if inv := euroR(t, p, EuroStatusInv); inv != ^euroR(t, p, EuroStatus) {
		t.Fatalf("inverted status %#x is not the bitwise NOT of the status", inv)
	}
	p.Step(2 * time.Hour)
	pv := float64(int16(euroR(t, p, EuroPV))) / 10
	if math.Abs(pv-700) > 3 {
		t.Fatalf("PV %.1f °C after the ramp and 1 h 10 min, want about 700", pv)
	}
	if st := euroR(t, p, EuroStatus); st&EuroStRampRunning != 0 {
		t.Fatalf("status %#x: ramp bit still set at the target", st)
	}
	if f := euroFloat(t, p, EuroPV); math.Abs(float64(f)-pv) > 0.06 {
		t.Fatalf("float PV %.3f differs from the 16-bit PV %.1f", f, pv)
	}
}

func TestEurothermOffByManualZero(t *testing.T) {
	p, _ := newEuro(t, true)
	auto(t, p, 8000, 0)
	p.Step(5 * time.Minute)
	before := euroR(t, p, EuroWorkingOP)
	if before == 0 {
		t.Fatal("no output in auto below the setpoint")
	}
	euroW(t, p, EuroAutoManual, 1) // bumpless: MAN.OP takes the working output
	if man := euroR(t, p, EuroManualOP); man == 0 || int(man) < int(before)-20 || int(man) > int(before)+20 {
		t.Fatalf("MAN.OP %d after the switch to manual, want about the working output %d", man, before)
	}
	p.Step(time.Second)
	if op := euroR(t, p, EuroWorkingOP); op == 0 {
		t.Fatal("output stepped to 0 on the switch to manual: not bumpless")
	}
	euroW(t, p, EuroManualOP, 0)
	p.Step(time.Second)
	if op := euroR(t, p, EuroWorkingOP); op != 0 {
		t.Fatalf("working output %d with manual output 0", op)
	}
	if s := p.Snapshot(); s.Furnace.OutputPct != 0 || s.Furnace.HeaterActive {
		t.Fatalf("element power %.1f %% (active %t) after manual/0", s.Furnace.OutputPct, s.Furnace.HeaterActive)
	}
	hot := p.FurnaceTemperature()
	p.Step(30 * time.Minute)
	if p.FurnaceTemperature() >= hot {
		t.Fatalf("furnace did not cool with the output off: %.1f -> %.1f °C", hot, p.FurnaceTemperature())
	}
	// back to auto: the loop resumes without a step from 0
	euroW(t, p, EuroAutoManual, 0)
	p.Step(time.Minute)
	if op := euroR(t, p, EuroWorkingOP); op == 0 {
		t.Fatal("no output after the return to auto below the setpoint")
	}
}

func TestEurothermOffByOutputHighLimit(t *testing.T) {
	p, _ := newEuro(t, true)
	auto(t, p, 8000, 0)
	p.Step(time.Minute)
	euroW(t, p, EuroOPHigh, 0)
	p.Step(time.Second)
	if op := euroR(t, p, EuroWorkingOP); op != 0 {
		t.Fatalf("working output %d with OP.HI 0", op)
	}
	euroW(t, p, EuroOPHigh, 500)
	p.Step(time.Minute)
	if op := euroR(t, p, EuroWorkingOP); op == 0 || op > 500 {
		t.Fatalf("working output %d with OP.HI 50.0 %% far below the setpoint, want 500", op)
	}
}

func TestEurothermRelayCutsPowerNotDemand(t *testing.T) {
	p, _ := newEuro(t, false) // relay de-energised
	auto(t, p, 8000, 0)
	p.Step(5 * time.Minute)
	if op := euroR(t, p, EuroWorkingOP); op == 0 {
		t.Fatal("the controller does not see the relay: its output should show the demand")
	}
	if s := p.Snapshot(); s.Furnace.OutputPct != 0 || s.Furnace.HeaterActive {
		t.Fatalf("element power %.1f %% with the relay open", s.Furnace.OutputPct)
	}
	if tc := p.FurnaceTemperature(); tc > AmbientC+0.5 {
		t.Fatalf("furnace at %.1f °C with the relay open", tc)
	}
}

func TestEurothermNoCommsWatchdog(t *testing.T) {
	p, clk := newEuro(t, true)
	auto(t, p, 5000, 0)
	for i := 0; i < 60; i++ { // an hour of wall clock without a single Modbus request
		clk.Add(time.Minute)
		p.Step(time.Minute)
	}
	if op := euroR(t, p, EuroWorkingOP); op == 0 || p.FurnaceTemperature() < 450 {
		t.Fatalf("the controller stopped heating after a silent hour (output %d, %.1f °C): it has no watchdog", op, p.FurnaceTemperature())
	}
	if st := euroR(t, p, EuroStatus); st&EuroStManual != 0 {
		t.Fatalf("status %#x: the silence changed the mode", st)
	}
}

func TestEurothermSensorBreak(t *testing.T) {
	p, _ := newEuro(t, true)
	auto(t, p, 8000, 0)
	p.Step(time.Minute)
	if err := p.Inject(FaultTCOpen, ""); err != nil {
		t.Fatal(err)
	}
	p.Step(time.Second)
	if pv := euroR(t, p, EuroPV); pv != EuroPVBreak {
		t.Fatalf("PV %#x during sensor break, want %#x", pv, EuroPVBreak)
	}
	if f := euroFloat(t, p, EuroPV); !math.IsNaN(float64(f)) {
		t.Fatalf("float PV %v during sensor break, want NaN", f)
	}
	if st := euroR(t, p, EuroStatus); st&EuroStSensorBreak == 0 {
		t.Fatalf("status %#x: sensor-break bit 5 not set", st)
	}
	if op := euroR(t, p, EuroWorkingOP); op != 0 {
		t.Fatalf("working output %d in auto during sensor break, want the sensor-break output 0", op)
	}
	if err := p.Clear(FaultTCOpen, ""); err != nil {
		t.Fatal(err)
	}
	if st := euroR(t, p, EuroStatus); st&EuroStSensorBreak != 0 {
		t.Fatalf("status %#x: sensor-break bit 5 still set after the repair", st)
	}
}

func TestEurothermAlarm1(t *testing.T) {
	p, _ := newEuro(t, true)
	euroW(t, p, EuroAlarm1, 300) // 30.0 °C
	auto(t, p, 1000, 0)
	p.Step(30 * time.Minute)
	if st := euroR(t, p, EuroStatus); st&EuroStAlarm1 == 0 {
		t.Fatalf("status %#x: alarm 1 not set with PV %.1f above 30.0", st, float64(int16(euroR(t, p, EuroPV)))/10)
	}
}

func TestEurothermRemoteSetpoint(t *testing.T) {
	p, _ := newEuro(t, true)
	auto(t, p, 3000, 0)
	euroW(t, p, EuroCommsSP, 4500)
	p.Step(time.Second)
	if wsp := euroR(t, p, EuroWorkingSP); wsp != 3000 {
		t.Fatalf("working setpoint %d with the local setpoint selected, want 3000", wsp)
	}
	euroW(t, p, EuroRemoteSelect, 1)
	p.Step(time.Second)
	if wsp := euroR(t, p, EuroWorkingSP); wsp != 4500 {
		t.Fatalf("working setpoint %d with the remote setpoint selected, want 4500", wsp)
	}
	// a host that ramps writes the comms setpoint, as a float too
	if err := p.EurothermWrite("tcp", EuroFloatBase+2*EuroCommsSP, floatWords(452.5)); err != nil {
		t.Fatal(err)
	}
	p.Step(time.Second)
	if wsp := euroFloat(t, p, EuroWorkingSP); wsp != 452.5 {
		t.Fatalf("working setpoint %v after a float write of 452.5 to Rm.SP", wsp)
	}
	if tg := euroR(t, p, EuroTargetSP); tg != 3000 {
		t.Fatalf("target setpoint %d changed by writes to the comms setpoint", tg)
	}
}

func TestEurothermWriteLogCountsTargetSetpointWrites(t *testing.T) {
	p, _ := newEuro(t, true)
	euroW(t, p, EuroTargetSP, 7000)
	if err := p.EurothermWrite("rtu", EuroFloatBase+2*EuroTargetSP, floatWords(700.5)); err != nil {
		t.Fatal(err)
	}
	if err := p.EurothermWrite("tcp", EuroTargetSP, []uint16{13000}); !errors.Is(err, ErrIllegalValue) {
		t.Fatalf("TG.SP 1300.0 °C: %v, want ErrIllegalValue", err)
	}
	for i := 0; i < 50; i++ {
		euroW(t, p, EuroCommsSP, uint16(3000+i))
	}
	counts := map[string]int{}
	refused := map[string]int{}
	for _, w := range p.Writes(0) {
		if w.Device != "furnace" {
			continue
		}
		counts[w.Channel]++
		if !w.Accepted {
			refused[w.Channel]++
		}
	}
	if counts["target_setpoint"] != 3 || refused["target_setpoint"] != 1 {
		t.Fatalf("target_setpoint entries %d (refused %d), want 3 (1)", counts["target_setpoint"], refused["target_setpoint"])
	}
	if counts["comms_setpoint"] != 50 {
		t.Fatalf("comms_setpoint entries %d, want 50", counts["comms_setpoint"])
	}
	for _, w := range p.Writes(0) {
		if w.Channel == "target_setpoint" && w.Via == "rtu" && w.Value != 700.5 {
			t.Fatalf("float write logged as %v, want 700.5 (engineering units)", w.Value)
		}
	}
}

func TestEurothermRefusals(t *testing.T) {
	p, _ := newEuro(t, true)
	tests := []struct {
		name string
		addr int
		vals []uint16
		want error
	}{
		{"unmapped address 0", 0, []uint16{1}, ErrIllegalAddress},
		{"instrument mode 199 not emulated", 199, []uint16{1}, ErrIllegalAddress},
		{"PV is read only", EuroPV, []uint16{250}, ErrIllegalAddress},
		{"working output is read only", EuroWorkingOP, []uint16{0}, ErrIllegalAddress},
		{"status is read only", EuroStatus, []uint16{0}, ErrIllegalAddress},
		{"FC16 over a read-only register", EuroManualOP, []uint16{0, 0}, ErrIllegalAddress},
		{"target setpoint above range", EuroTargetSP, []uint16{12001}, ErrIllegalValue},
		{"target setpoint negative", EuroTargetSP, []uint16{0xFFFF}, ErrIllegalValue},
		{"A-M 2 (off) not emulated", EuroAutoManual, []uint16{2}, ErrIllegalValue},
		{"remote select 2", EuroRemoteSelect, []uint16{2}, ErrIllegalValue},
		{"manual output above 100 %", EuroManualOP, []uint16{1001}, ErrIllegalValue},
		{"OP.HI below OP.LO", EuroOPHigh, []uint16{300, 400}, ErrIllegalValue},
		{"rate above range", EuroSPRate, []uint16{30001}, ErrIllegalValue},
		{"float write misaligned", EuroFloatBase + 2*EuroTargetSP + 1, floatWords(300), ErrIllegalAddress},
		{"float write odd count", EuroFloatBase + 2*EuroTargetSP, []uint16{0x4396}, ErrIllegalAddress},
		{"float write NaN", EuroFloatBase + 2*EuroTargetSP, floatWords(float32(math.NaN())), ErrIllegalValue},
		{"float write of an enumeration", EuroFloatBase + 2*EuroAutoManual, floatWords(0), ErrIllegalAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.Snapshot().Furnace.Eurotherm
			if err := p.EurothermWrite("tcp", tt.addr, tt.vals); !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if after := p.Snapshot().Furnace.Eurotherm; !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused write changed the controller: %+v -> %+v", *before, *after)
			}
		})
	}
	reads := []struct {
		name string
		addr int
		n    int
	}{
		{"across the gap after 5", EuroPV, 6},
		{"address 0", 0, 1},
		{"float region odd start", EuroFloatBase + 3, 2},
		{"float region odd count", EuroFloatBase + 2, 3},
		{"float region of the status", EuroFloatBase + 2*EuroStatus, 2},
	}
	for _, tt := range reads {
		if err := p.EurothermRead(tt.addr, make([]uint16, tt.n)); !errors.Is(err, ErrIllegalAddress) {
			t.Errorf("read %s: %v, want ErrIllegalAddress", tt.name, err)
		}
	}
	if err := p.EurothermRead(EuroPV, make([]uint16, 5)); err != nil {
		t.Fatalf("read 1..5 in one request: %v", err)
	}
	if err := p.EurothermRead(EuroFloatBase+2*EuroPV, make([]uint16, 10)); err != nil {
		t.Fatalf("read floats of 1..5 in one request: %v", err)
	}
}

// TestRelayWatchdogWithEurotherm is the dead-agent path of a controller
// without comms watchdog: with the relay watchdog fitted, a heartbeat toggled
// every 400 ms holds the relay while the Eurotherm heats; when the toggling
// stops the coil drops exactly T = 500 ms after the last edge, the element
// loses power although the controller still asks for it, a High write alone
// does not bring it back, and a High write with the heartbeat alive again does.
func TestRelayWatchdogWithEurotherm(t *testing.T) {
	const T = 500 * time.Millisecond
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{Now: clk.Now, RelayWatchdog: T, FurnaceModel: FurnaceEurotherm3200, MaxWrites: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	auto(t, p, 8000, 0)
	if err := p.SetGPIO(PinRelay, true); err != nil {
		t.Fatal(err)
	}
	level := false
	for i := 0; i < 5; i++ { // a heartbeat edge every 400 ms holds it
		clk.Add(400 * time.Millisecond)
		level = !level
		if err := p.SetGPIO(PinHeartbeat, level); err != nil {
			t.Fatal(err)
		}
		p.Step(time.Second)
		if !p.Relay() {
			t.Fatalf("relay dropped at edge %d although the heartbeat toggled every 400 ms", i)
		}
	}
	if s := p.Snapshot(); !s.Furnace.HeaterActive || s.Furnace.OutputPct == 0 {
		t.Fatalf("not heating while the relay is held: active %t, output %.1f %%", s.Furnace.HeaterActive, s.Furnace.OutputPct)
	}
	lastEdge := clk.Now()
	clk.Add(T - time.Millisecond)
	if !p.Relay() {
		t.Fatal("relay dropped 499 ms after the last edge of a 500 ms watchdog")
	}
	clk.Add(time.Millisecond)
	if p.Relay() {
		t.Fatal("relay still energised 500 ms after the last edge")
	}
	if fb, _ := p.GPIOLevel(PinRelayFB); fb {
		t.Fatal("relay_fb High after the drop")
	}
	p.Step(time.Minute)
	s := p.Snapshot()
	if s.Furnace.HeaterActive || s.Furnace.OutputPct != 0 {
		t.Fatalf("element still powered after the drop: active %t, output %.1f %%", s.Furnace.HeaterActive, s.Furnace.OutputPct)
	}
	if op := euroR(t, p, EuroWorkingOP); op == 0 {
		t.Fatal("the controller's output fell with the relay: it has no watchdog and should still ask for power")
	}
	st := s.RelayWatchdog
	if st == nil || st.Drops != 1 || st.TimeoutMs != 500 || !st.LastDrop.ExpiredAt.Equal(lastEdge.Add(T)) || !st.LastDrop.At.Equal(lastEdge.Add(T)) {
		t.Fatalf("relay watchdog state %+v", st)
	}
	if err := p.SetGPIO(PinRelay, true); err != nil {
		t.Fatal(err)
	}
	if p.Relay() {
		t.Fatal("a High write without a live heartbeat energised the relay")
	}
	clk.Add(100 * time.Millisecond)
	if err := p.SetGPIO(PinHeartbeat, !level); err != nil {
		t.Fatal(err)
	}
	if err := p.SetGPIO(PinRelay, true); err != nil {
		t.Fatal(err)
	}
	if !p.Relay() {
		t.Fatal("a High write with the heartbeat alive again did not energise the relay")
	}
}

func TestUnknownModels(t *testing.T) {
	if _, err := New(Opts{FurnaceModel: "eurotherm2408"}); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("furnace model eurotherm2408: %v", err)
	}
	if _, err := New(Opts{DIOModel: "adam6060"}); !errors.Is(err, ErrUnknownModel) {
		t.Fatalf("dio model adam6060: %v", err)
	}
}

func TestEurothermRefusedWritesAreLoggedByName(t *testing.T) {
	p, _ := newEuro(t, true)
	_ = p.EurothermWrite("tcp", EuroFloatBase+2*EuroPV, floatWords(30))
	_ = p.EurothermWrite("tcp", EuroWorkingOP, []uint16{0})
	_ = p.EurothermWrite("tcp", 199, []uint16{1})
	_ = p.EurothermWrite("tcp", EuroFloatBase+2*EuroStatus, floatWords(0))
	var got []string
	for _, w := range p.Writes(0) {
		if w.Accepted {
			t.Fatalf("refused write logged as accepted: %+v", w)
		}
		got = append(got, w.Channel)
	}
	want := []string{"pv", "working_output", "addr:199", "addr:32918"}
	if len(got) != len(want) {
		t.Fatalf("channels %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("channels %v, want %v", got, want)
		}
	}
}
