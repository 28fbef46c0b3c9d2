package plant

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
)

// fakeClock is an injectable wall clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTest(t *testing.T, relay bool) (*Plant, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayEnergised: relay, Now: clk.Now, MaxWrites: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, clk
}

func mustWrite(t *testing.T, p *Plant, addr int, vals ...uint16) {
	t.Helper()
	if err := p.FurnaceWriteHolding("tcp", addr, vals); err != nil {
		t.Fatalf("write HR %d %v: %v", addr, vals, err)
	}
}

func ir(t *testing.T, p *Plant, addr int) uint16 {
	t.Helper()
	v := make([]uint16, 1)
	if err := p.FurnaceReadInputs(addr, v); err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func TestRampFollowsRate(t *testing.T) {
	p, _ := newTest(t, true)
	mustWrite(t, p, HRWatchdogTimeout, 0)
	mustWrite(t, p, HRSetpoint, 7250, 100, 1) // 725 °C at 10 °C/min, heater on
	p.Step(30 * time.Minute)
	s := p.Snapshot()
	if want := 25 + 300.0; math.Abs(s.Furnace.WorkingSetpointC-want) > 0.5 {
		t.Fatalf("working setpoint %.2f after 30 min, want %.1f", s.Furnace.WorkingSetpointC, want)
	}
	if ir(t, p, IRStatus)&StatusRamping == 0 {
		t.Fatal("status does not say ramping")
	}
	if lag := s.Furnace.WorkingSetpointC - s.Furnace.TemperatureC; lag < 0 || lag > 15 {
		t.Fatalf("temperature %.1f lags the ramp %.1f by %.1f", s.Furnace.TemperatureC, s.Furnace.WorkingSetpointC, lag)
	}
	p.Step(90 * time.Minute)
	if T := p.FurnaceTemperature(); math.Abs(T-725) > 1 {
		t.Fatalf("settled at %.2f", T)
	}
	if ir(t, p, IRStatus)&StatusRamping != 0 {
		t.Fatal("still ramping")
	}
}

func TestStepOvershootSmallButPresent(t *testing.T) {
	p, _ := newTest(t, true)
	mustWrite(t, p, HRWatchdogTimeout, 0)
	mustWrite(t, p, HRSetpoint, 7250, 0, 1)
	peak := 0.0
	for i := 0; i < 7200; i++ {
		p.Step(time.Second)
		peak = math.Max(peak, p.FurnaceTemperature())
	}
	if over := peak - 725; over < 0.5 || over > 10 {
		t.Fatalf("overshoot %.2f °C, want a few", over)
	}
	if T := p.FurnaceTemperature(); math.Abs(T-725) > 0.5 {
		t.Fatalf("settled at %.2f", T)
	}
	// full power tops out near 1300 °C
	if got := AmbientC + furnaceGainC; got < 1250 || got > 1350 {
		t.Fatalf("full-power temperature %.0f", got)
	}
}

func TestRelayGatesHeaterAndValves(t *testing.T) {
	p, _ := newTest(t, false)
	mustWrite(t, p, HRWatchdogTimeout, 0)
	mustWrite(t, p, HRSetpoint, 5000, 0, 1)
	_ = p.DIOWriteCoils("tcp", CoilArValve, []bool{true})
	_ = p.SetMFCSetpoint("ar", 100)
	p.Step(10 * time.Minute)
	if T := p.FurnaceTemperature(); T > 26 {
		t.Fatalf("heated to %.1f with the relay de-energised", T)
	}
	if ir(t, p, IRStatus)&(StatusHeater|StatusInterlock) != 0 || ir(t, p, IROutputPower) != 0 {
		t.Fatal("status claims heater power")
	}
	s := p.Snapshot()
	if s.MFCs["ar"].ValveOpen || s.MFCs["ar"].ToChamberSCCM != 0 || !s.Coils["ar_valve"] {
		t.Fatalf("valve state %+v coils %v", s.MFCs["ar"], s.Coils)
	}
	if err := p.RelayPin().Out(gpio.High); err != nil {
		t.Fatal(err)
	}
	p.Step(10 * time.Minute)
	if T := p.FurnaceTemperature(); T < 200 {
		t.Fatalf("only %.1f with the relay energised", T)
	}
	if s := p.Snapshot(); !s.MFCs["ar"].ValveOpen || s.MFCs["ar"].ToChamberSCCM < 99 {
		t.Fatalf("valve closed with relay on: %+v", s.MFCs["ar"])
	}
	// thermal runaway needs the relay too
	_ = p.RelayPin().Out(gpio.Low)
	_ = p.Inject(FaultThermalRunaway, "")
	p.Step(time.Minute)
	if ir(t, p, IROutputPower) != 0 {
		t.Fatal("runaway heats without the relay")
	}
	_ = p.RelayPin().Out(gpio.High)
	mustWrite(t, p, HRHeaterEnable, 0)
	p.Step(time.Minute)
	if ir(t, p, IROutputPower) != 1000 {
		t.Fatalf("runaway output %d", ir(t, p, IROutputPower))
	}
}

func TestWatchdogWallClock(t *testing.T) {
	p, clk := newTest(t, true)
	mustWrite(t, p, HRSetpoint, 5000, 0, 1)
	clk.Add(4 * time.Second)
	p.Step(time.Hour) // lots of sim time: the watchdog does not care
	if ir(t, p, IRAlarms)&AlarmWatchdog != 0 {
		t.Fatal("watchdog tripped on sim time")
	}
	mustWrite(t, p, HRWatchdogKick, 1)
	clk.Add(4 * time.Second)
	if ir(t, p, IRAlarms)&AlarmWatchdog != 0 {
		t.Fatal("kick did not restart the watchdog")
	}
	clk.Add(1500 * time.Millisecond)
	if ir(t, p, IRAlarms)&AlarmWatchdog == 0 {
		t.Fatal("watchdog did not expire")
	}
	hr := make([]uint16, 1)
	_ = p.FurnaceReadHolding(HRHeaterEnable, hr)
	p.Step(time.Second)
	if hr[0] != 0 || ir(t, p, IROutputPower) != 0 || ir(t, p, IRStatus)&StatusHeater != 0 {
		t.Fatalf("heater still on after watchdog: enable %d", hr[0])
	}
	mustWrite(t, p, HRHeaterEnable, 1)
	if ir(t, p, IRAlarms)&AlarmWatchdog != 0 {
		t.Fatal("alarm not cleared by heater enable")
	}
}

func TestRegisterRanges(t *testing.T) {
	p, _ := newTest(t, true)
	tests := []struct {
		name string
		addr int
		vals []uint16
		want error
	}{
		{"setpoint max", HRSetpoint, []uint16{12000}, nil},
		{"setpoint above", HRSetpoint, []uint16{12001}, ErrIllegalValue},
		{"setpoint negative", HRSetpoint, []uint16{0xFFFF}, ErrIllegalValue},
		{"ramp above", HRRampRate, []uint16{1001}, ErrIllegalValue},
		{"enable 2", HRHeaterEnable, []uint16{2}, ErrIllegalValue},
		{"watchdog 0", HRWatchdogTimeout, []uint16{0}, nil},
		{"watchdog 99", HRWatchdogTimeout, []uint16{99}, ErrIllegalValue},
		{"watchdog 60001", HRWatchdogTimeout, []uint16{60001}, ErrIllegalValue},
		{"kick anything", HRWatchdogKick, []uint16{0xBEEF}, nil},
		{"alarm above", HRAlarmLimit, []uint16{13001}, ErrIllegalValue},
		{"past map", 5, []uint16{1, 2}, ErrIllegalAddress},
		{"all or nothing", HRSetpoint, []uint16{100, 2000}, ErrIllegalValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.FurnaceWriteHolding("tcp", tt.addr, tt.vals); !errors.Is(err, tt.want) {
				t.Fatalf("err %v want %v", err, tt.want)
			}
		})
	}
	hr := make([]uint16, 2)
	_ = p.FurnaceReadHolding(0, hr)
	if hr[0] != 12000 || hr[1] != 0 {
		t.Fatalf("registers %v", hr)
	}
	if err := p.FurnaceReadInputs(8, make([]uint16, 2)); !errors.Is(err, ErrIllegalAddress) {
		t.Fatal(err)
	}
}

func TestInputRegisterEncodings(t *testing.T) {
	p, _ := newTest(t, true)
	p.Step(70000 * time.Second)
	regs := make([]uint16, NumInputRegs)
	_ = p.FurnaceReadInputs(0, regs)
	f := math.Float32frombits(uint32(regs[IRPVFloat])<<16 | uint32(regs[IRPVFloat+1]))
	if math.Abs(float64(f)-float64(int16(regs[IRPV]))/10) > 0.06 {
		t.Fatalf("float PV %v vs int %d", f, regs[IRPV])
	}
	if up := uint32(regs[IRUptime]) | uint32(regs[IRUptime+1])<<16; up != 70000 {
		t.Fatalf("uptime %d (CDAB)", up)
	}
	_ = p.Inject(FaultTCOpen, "")
	_ = p.FurnaceReadInputs(0, regs)
	f = math.Float32frombits(uint32(regs[IRPVFloat])<<16 | uint32(regs[IRPVFloat+1]))
	if regs[IRPV] != PVOpen || !math.IsNaN(float64(f)) || regs[IRAlarms]&AlarmSensor == 0 {
		t.Fatalf("tc-open: %v", regs)
	}
}

func TestTCFrozen(t *testing.T) {
	p, _ := newTest(t, true)
	mustWrite(t, p, HRWatchdogTimeout, 0)
	_ = p.Inject(FaultTCFrozen, "")
	pv := ir(t, p, IRPV)
	mustWrite(t, p, HRSetpoint, 5000, 0, 1)
	p.Step(5 * time.Minute)
	if got := ir(t, p, IRPV); got != pv {
		t.Fatalf("PV moved %d -> %d", pv, got)
	}
	if p.FurnaceTemperature() < 100 {
		t.Fatal("real temperature did not move")
	}
}

func TestChamberPressure(t *testing.T) {
	p, _ := newTest(t, true)
	if got := p.ChamberPressure(); got != AtmospherePa {
		t.Fatalf("starts at %v", got)
	}
	_ = p.DIOWriteCoils("tcp", CoilPump, []bool{true}) // gate closed: no pumping
	p.Step(time.Minute)
	if got := p.ChamberPressure(); got < 0.99*AtmospherePa {
		t.Fatalf("pumped through a closed gate valve: %v", got)
	}
	_ = p.DIOWriteCoils("tcp", CoilGateValve, []bool{true})
	p.Step(15 * time.Minute)
	base := p.ChamberPressure()
	if base < 0.5 || base > 2 {
		t.Fatalf("base pressure %v Pa", base)
	}
	_ = p.SetMFCSetpoint("ar", 100)
	_ = p.DIOWriteCoils("tcp", CoilArValve, []bool{true})
	p.Step(5 * time.Minute)
	if got := p.ChamberPressure(); got < 20 || got > 80 {
		t.Fatalf("with 100 sccm Ar: %v Pa", got)
	}
	_ = p.DIOWriteCoils("tcp", CoilArValve, []bool{false})
	_ = p.Inject(FaultVacuumLoss, "")
	p.Step(5 * time.Minute)
	if got := p.ChamberPressure(); got < 1000 {
		t.Fatalf("vacuum loss: %v Pa", got)
	}
	p.ClearAll()
	p.Step(15 * time.Minute)
	if got := p.ChamberPressure(); got > 2 {
		t.Fatalf("did not recover: %v Pa", got)
	}
	// leak alone, pump isolated: pressure creeps up
	_ = p.DIOWriteCoils("tcp", CoilGateValve, []bool{false})
	before := p.ChamberPressure()
	p.Step(10 * time.Minute)
	if rise := p.ChamberPressure() - before; rise < 10 {
		t.Fatalf("leak-up %v Pa in 10 min", rise)
	}
	_ = p.DIOWriteCoils("tcp", CoilVent, []bool{true})
	p.Step(5 * time.Minute)
	if got := p.ChamberPressure(); math.Abs(got-AtmospherePa) > 100 {
		t.Fatalf("vented to %v", got)
	}
}

func TestGrowthCalibration(t *testing.T) {
	tests := []struct {
		name     string
		sp       uint16
		min, max float64
	}{
		{"725 C 10 min", 7250, 0.8, 1.2},
		{"850 C 10 min", 8500, 2, 100},
		{"500 C 10 min", 5000, 0, 0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTest(t, true)
			mustWrite(t, p, HRWatchdogTimeout, 0)
			mustWrite(t, p, HRSetpoint, tt.sp, 0, 1)
			_ = p.DIOWriteCoils("tcp", CoilPump, []bool{true, true, true})
			_ = p.SetMFCSetpoint("ar", 100)
			p.Step(2 * time.Hour) // heat up and settle
			_ = p.SetMFCSetpoint("h2s", 5)
			if p.Layers() != 0 {
				t.Fatal("grew without H2S")
			}
			_ = p.DIOWriteCoils("tcp", CoilH2SValve, []bool{true})
			p.Step(10 * time.Minute)
			_ = p.DIOWriteCoils("tcp", CoilH2SValve, []bool{false})
			p.Step(time.Minute)
			if l := p.Layers(); l < tt.min || l > tt.max {
				t.Fatalf("%.3f layers, want %g..%g", l, tt.min, tt.max)
			}
		})
	}
}

func TestMFC(t *testing.T) {
	p, _ := newTest(t, true)
	if err := p.SetMFCSetpoint("H2S", 51); !errors.Is(err, ErrIllegalValue) {
		t.Fatal(err)
	}
	if err := p.SetMFCSetpoint("h2s", math.NaN()); !errors.Is(err, ErrIllegalValue) {
		t.Fatal(err)
	}
	if err := p.SetMFCSetpoint("xe", 1); !errors.Is(err, ErrUnknownGas) {
		t.Fatal(err)
	}
	_ = p.SetMFCSetpoint("h2", 50)
	p.Step(10 * time.Second)
	m, _ := p.MFC("h2")
	if math.Abs(m.FlowSCCM-50) > 0.5 || m.UnitID != 'B' {
		t.Fatalf("%+v", m)
	}
	_ = p.SetMFCHold("h2", true)
	p.Step(10 * time.Second)
	if m, _ := p.MFC("h2"); math.Abs(m.FlowSCCM) > 0.5 || !m.Hold {
		t.Fatalf("hold: %+v", m)
	}
	_ = p.Inject(FaultMFCStuckOpen, "h2")
	p.Step(10 * time.Second)
	if m, _ := p.MFC("h2"); m.FlowSCCM <= m.FullScaleSCCM || !m.StuckOpen {
		t.Fatalf("stuck open: %+v", m)
	}
}

func TestDIO(t *testing.T) {
	p, _ := newTest(t, true)
	in := make([]bool, NumInputs)
	_ = p.DIOWriteCoils("rtu", CoilPump, []bool{true})
	_ = p.DIOWriteCoils("rtu", CoilScrubber, []bool{true})
	p.Step(1500 * time.Millisecond)
	_ = p.DIOReadInputs(0, in)
	if !in[DIDoorClosed] || in[DIExhaustOK] || !in[DIPumpRunning] {
		t.Fatalf("inputs %v", in)
	}
	p.Step(time.Second)
	_ = p.Inject(FaultDoorOpen, "")
	_ = p.DIOReadInputs(0, in)
	if in[DIDoorClosed] || !in[DIExhaustOK] {
		t.Fatalf("inputs %v", in)
	}
	if err := p.DIOWriteCoils("rtu", 6, []bool{true, true}); !errors.Is(err, ErrIllegalAddress) {
		t.Fatal(err)
	}
	ws := p.Writes(0)
	if len(ws) != 4 || ws[3].Accepted || ws[3].Channel != "coil:7" || ws[0].Channel != "coil:pump" || ws[0].Via != "rtu" {
		t.Fatalf("log %+v", ws)
	}
}

func TestGPIOPins(t *testing.T) {
	p, _ := newTest(t, false)
	estop := p.EstopPin()
	if err := estop.In(gpio.PullNoChange, gpio.FallingEdge); err != nil {
		t.Fatal(err)
	}
	if estop.Read() != gpio.High || estop.WaitForEdge(0) {
		t.Fatal("estop pressed at start")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = p.Inject(FaultEstop, "")
	}()
	if !estop.WaitForEdge(3*time.Second) || estop.Read() != gpio.Low {
		t.Fatal("no falling edge on e-stop")
	}
	if err := estop.(*Pin).Out(gpio.High); !errors.Is(err, ErrInputPin) {
		t.Fatal(err)
	}
	fb := p.RelayFeedbackPin()
	_ = fb.In(gpio.PullNoChange, gpio.BothEdges)
	_ = p.RelayPin().Out(gpio.High)
	if !fb.WaitForEdge(0) || fb.Read() != gpio.High {
		t.Fatal("relay feedback did not follow")
	}
	if fb.WaitForEdge(10 * time.Millisecond) {
		t.Fatal("spurious edge")
	}
	if err := p.RelayPin().Halt(); err != nil || p.Relay() {
		t.Fatal("halt did not de-energise")
	}
	if _, err := p.GPIOPin("nope"); !errors.Is(err, ErrUnknownPin) {
		t.Fatal(err)
	}
}

func TestFaultValidation(t *testing.T) {
	p, _ := newTest(t, true)
	tests := []struct {
		name, fault, target string
		want                error
	}{
		{"silent mfc", FaultSilent, "mfc-ar", nil},
		{"silent no target", FaultSilent, "", ErrBadTarget},
		{"corrupt raman", FaultCorrupt, "RAMAN", nil},
		{"stuck h2s", FaultMFCStuckOpen, "h2s", nil},
		{"stuck furnace", FaultMFCStuckOpen, "furnace", ErrBadTarget},
		{"estop with target", FaultEstop, "x", ErrBadTarget},
		{"unknown", "lightning", "", ErrUnknownFault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.Inject(tt.fault, tt.target); !errors.Is(err, tt.want) {
				t.Fatalf("err %v", err)
			}
		})
	}
	if !p.FaultActive(FaultCorrupt, "raman") || len(p.Faults()) != 3 {
		t.Fatalf("faults %+v", p.Faults())
	}
	_ = p.Clear(FaultSilent, "")
	if p.FaultActive(FaultSilent, "mfc-ar") {
		t.Fatal("clear without target")
	}
	_ = p.Clear("all", "")
	if len(p.Faults()) != 0 {
		t.Fatal("clear all")
	}
}

func TestWriteLogBounded(t *testing.T) {
	p, _ := newTest(t, true) // MaxWrites 1000
	for i := 0; i < 1500; i++ {
		p.RecordWrite("mfc-ar", "serial", "setpoint", float64(i), true)
	}
	last, dropped := p.WriteLogStats()
	ws := p.Writes(0)
	if last != 1500 || dropped != 500 || len(ws) != 1000 || ws[0].Seq != 501 || ws[999].Seq != 1500 {
		t.Fatalf("last %d dropped %d len %d first %d", last, dropped, len(ws), ws[0].Seq)
	}
	if got := p.Writes(1490); len(got) != 10 || got[0].Value != 1490 {
		t.Fatalf("since: %+v", got)
	}
}

func TestStartCloseConcurrent(t *testing.T) {
	p, err := New(Opts{TimeScale: 1000, Tick: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				_ = p.FurnaceWriteHolding("tcp", HRWatchdogKick, []uint16{uint16(j)})
				_ = p.Snapshot()
				p.RecordWrite("gauge", "serial", "unit", 0, true)
			}
		}()
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond)
	if p.SimElapsed() <= 0 {
		t.Fatal("physics did not run")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.RelayPin().WaitForEdge(-1) {
		t.Fatal("edge after close")
	}
}

// TestChamberLeakFault: the isolated chamber's rate of rise is its own leak
// (about 3 Pa/min) plus what each chamber-leak fault adds, and the pumped
// base pressure still lies below 5 Pa with a 12 Pa/min leak.
func TestChamberLeakFault(t *testing.T) {
	for _, bad := range []string{"", "x", "0", "-3", "1e9", "NaN"} {
		if err := (&Plant{}).Inject(FaultChamberLeak, bad); err == nil {
			t.Fatalf("target %q accepted", bad)
		}
	}
	rise := func(p *Plant) float64 {
		_ = p.DIOWriteCoils("tcp", CoilGateValve, []bool{true})
		p.Step(15 * time.Minute)
		_ = p.DIOWriteCoils("tcp", CoilGateValve, []bool{false})
		before := p.ChamberPressure()
		p.Step(5 * time.Minute)
		return (p.ChamberPressure() - before) / 5
	}
	p, _ := newTest(t, true)
	_ = p.DIOWriteCoils("tcp", CoilPump, []bool{true})
	tight := rise(p)
	if tight < 2.5 || tight > 3.5 {
		t.Fatalf("tight chamber: %.3f Pa/min", tight)
	}
	if err := p.Inject(FaultChamberLeak, "12"); err != nil {
		t.Fatal(err)
	}
	_ = p.DIOWriteCoils("tcp", CoilGateValve, []bool{true})
	p.Step(15 * time.Minute)
	if base := p.ChamberPressure(); base >= 5 {
		t.Fatalf("base pressure with a 12 Pa/min leak: %.2f Pa", base)
	}
	if got := rise(p) - tight; math.Abs(got-12) > 0.2 {
		t.Fatalf("the fault adds %.3f Pa/min, want 12", got)
	}
	if err := p.Clear(FaultChamberLeak, "12.0"); err != nil || len(p.Faults()) != 0 {
		t.Fatalf("clear: %v %v", err, p.Faults())
	}
}

func TestSpectrumFaults(t *testing.T) {
	p, _ := newTest(t, true)
	if p.SpectrumFaults() != (SpectrumFaults{}) {
		t.Fatal("spectrum faults active at start")
	}
	for _, f := range [][2]string{{FaultRamanFluorescence, ""}, {FaultRamanSpikes, "5"}, {FaultRamanSaturation, "30000"}, {FaultRamanMixed, ""}} {
		if err := p.Inject(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Inject(FaultRamanSpikes, "8"); err != nil { // replaces 5
		t.Fatal(err)
	}
	want := SpectrumFaults{Fluorescence: 1, Spikes: 8, FullWell: 30000, MixedCoverage: true}
	if got := p.SpectrumFaults(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range [][2]string{{FaultRamanSpikes, "-1"}, {FaultRamanFluorescence, "x"}, {FaultRamanMixed, "3"}, {FaultRamanSaturation, "0"}} {
		if err := p.Inject(bad[0], bad[1]); !errors.Is(err, ErrBadTarget) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	_ = p.Clear(FaultRamanSpikes, "")
	if p.SpectrumFaults().Spikes != 0 {
		t.Fatal("clear")
	}
}

func TestFilmTruth(t *testing.T) {
	for _, c := range []struct {
		film  Film
		count int
		cov   map[int]float64
	}{
		{Film{}, 0, map[int]float64{0: 1}},
		{Film{MoS2: 0.25}, 1, map[int]float64{0: 0.75, 1: 0.25}},
		{Film{MoS2: 2}, 2, map[int]float64{2: 1}},
		{Film{WS2: 1.5}, 1, map[int]float64{1: 0.5, 2: 0.5}},
		{Film{WS2: 1.75}, 2, map[int]float64{1: 0.25, 2: 0.75}},
		{Film{MoS2: 6}, 4, map[int]float64{4: 1}},
	} {
		tr := c.film.Truth()
		if tr.LayerCount != c.count || len(tr.Coverage) != len(c.cov) {
			t.Fatalf("%+v: %+v", c.film, tr)
		}
		for k, v := range c.cov {
			if math.Abs(tr.Coverage[k]-v) > 1e-9 {
				t.Fatalf("%+v: %+v", c.film, tr)
			}
		}
	}
}
