package preview

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
)

// The simulated instruments below implement the device contracts directly
// on the plant's register and state API, in process: no bus, no socket, no
// driver. Every reading is stamped with the virtual clock. They decode the
// registers the way the real drivers do (drivers/furnace, drivers/dio,
// drivers/alicat, drivers/tpg, drivers/raman, drivers/gpio), so that the
// interlock judges what it would judge on the rig.

// via is the write log's "via" of the preview's writes.
const via = "preview"

// errSim wraps a plant refusal the way a driver reports an instrument's.
func errSim(name string, err error) error {
	if errors.Is(err, plant.ErrIllegalValue) {
		return fmt.Errorf("%s: %w: %w", name, device.ErrOutOfRange, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// simFurnace is the furnace temperature controller (Modbus unit 1).
type simFurnace struct {
	p     *plant.Plant
	clock *Clock
}

func (f *simFurnace) String() string { return "furnace" }

func (f *simFurnace) Halt(ctx context.Context) error { return f.SetHeater(ctx, false) }

func (f *simFurnace) Status(context.Context) (device.FurnaceStatus, error) {
	in := make([]uint16, plant.NumInputRegs)
	hr := make([]uint16, plant.NumHoldingRegs)
	if err := f.p.FurnaceReadInputs(0, in); err != nil {
		return device.FurnaceStatus{}, errSim("furnace", err)
	}
	if err := f.p.FurnaceReadHolding(0, hr); err != nil {
		return device.FurnaceStatus{}, errSim("furnace", err)
	}
	s := device.FurnaceStatus{
		ProcessValue:    device.Celsius(float64(int16(in[plant.IRPV])) / 10),
		WorkingSetpoint: device.Celsius(float64(int16(in[plant.IRWorkingSP])) / 10),
		OutputPower:     device.Percent(float64(in[plant.IROutputPower]) / 10),
		Setpoint:        device.Celsius(float64(int16(hr[plant.HRSetpoint])) / 10),
		RampRate:        device.KelvinPerMinute(float64(hr[plant.HRRampRate]) / 10),
		HeaterEnabled:   hr[plant.HRHeaterEnable] != 0,
		At:              f.clock.Now(),
	}
	a := in[plant.IRAlarms]
	if a&plant.AlarmHighTemp != 0 {
		s.Alarms |= device.AlarmHighTemperature
	}
	if a&plant.AlarmSensor != 0 || in[plant.IRPV] == plant.PVOpen {
		s.Alarms |= device.AlarmSensorBreak
	}
	if a&plant.AlarmWatchdog != 0 {
		s.Alarms |= device.AlarmWatchdog
	}
	if s.Alarms&device.AlarmSensorBreak != 0 {
		return s, fmt.Errorf("furnace: thermocouple open (PV invalid): %w", device.ErrSensor)
	}
	return s, nil
}

// write writes one holding register and reads it back, as the driver's
// writeConfirmed does.
func (f *simFurnace) write(what string, addr int, v uint16) error {
	if err := f.p.FurnaceWriteHolding(via, addr, []uint16{v}); err != nil {
		return errSim("furnace: write "+what, err)
	}
	back := make([]uint16, 1)
	if err := f.p.FurnaceReadHolding(addr, back); err != nil {
		return errSim("furnace: read back "+what, err)
	}
	if back[0] != v {
		return fmt.Errorf("furnace: %s wrote %04x, reads %04x: %w", what, v, back[0], device.ErrReadback)
	}
	return nil
}

func (f *simFurnace) SetSetpoint(_ context.Context, t device.Temperature) error {
	c := t.Celsius()
	if !device.Finite(c) || c < 0 || c > 1200 {
		return fmt.Errorf("furnace: setpoint %v outside 0..1200 °C: %w", t, device.ErrOutOfRange)
	}
	return f.write("setpoint", plant.HRSetpoint, uint16(int16(math.Round(c*10))))
}

func (f *simFurnace) SetRampRate(_ context.Context, r device.TemperatureRate) error {
	v := r.KelvinPerMinute()
	if !device.Finite(v) || v < 0 || v > 100 {
		return fmt.Errorf("furnace: ramp rate %v outside 0..100 °C/min: %w", r, device.ErrOutOfRange)
	}
	return f.write("ramp rate", plant.HRRampRate, uint16(math.Round(v*10)))
}

func (f *simFurnace) SetHeater(_ context.Context, on bool) error {
	var v uint16
	if on {
		v = 1
	}
	return f.write("heater enable", plant.HRHeaterEnable, v)
}

func (f *simFurnace) KickWatchdog(context.Context) error {
	if err := f.p.FurnaceWriteHolding(via, plant.HRWatchdogKick, []uint16{uint16(f.clock.Elapsed() / time.Millisecond)}); err != nil {
		return errSim("furnace: kick", err)
	}
	return nil
}

// configureWatchdog writes the comms watchdog's timeout, as the daemon does
// at start.
func (f *simFurnace) configureWatchdog(d time.Duration) error {
	return f.write("watchdog timeout", plant.HRWatchdogTimeout, uint16(d/time.Millisecond))
}

// simMFC is one mass-flow controller.
type simMFC struct {
	p         *plant.Plant
	clock     *Clock
	name, gas string
	fullScale device.Flow
}

func (m *simMFC) String() string         { return m.name }
func (m *simMFC) FullScale() device.Flow { return m.fullScale }

func (m *simMFC) ReadFlow(context.Context) (device.FlowStatus, error) {
	s, ok := m.p.MFC(m.gas)
	if !ok {
		return device.FlowStatus{}, fmt.Errorf("%s: no controller for %s in the simulator: %w", m.name, m.gas, device.ErrFrame)
	}
	fs := device.FlowStatus{Gas: m.gas, Flow: device.SCCM(s.FlowSCCM), Setpoint: device.SCCM(s.SetpointSCCM),
		Pressure: device.Pressure(s.PressurePSIA * 6894.757), Temperature: device.Celsius(s.TempC), At: m.clock.Now()}
	if s.Hold {
		fs.Flags = append(fs.Flags, "HLD")
	}
	return fs, nil
}

func (m *simMFC) SetFlow(_ context.Context, f device.Flow) error {
	v := f.SCCM()
	if !device.Finite(v) || v < 0 || f > m.fullScale {
		return fmt.Errorf("%s: set flow %v (range 0..%v): %w", m.name, f, m.fullScale, device.ErrOutOfRange)
	}
	v = math.Round(v*100) / 100 // the driver sends two decimals
	err := m.p.SetMFCSetpoint(m.gas, v)
	m.p.RecordWrite(m.name, via, "setpoint", v, err == nil)
	if err != nil {
		return errSim(m.name, err)
	}
	if v > 0 {
		if err := m.p.SetMFCHold(m.gas, false); err != nil {
			return errSim(m.name, err)
		}
	}
	s, _ := m.p.MFC(m.gas)
	if math.Abs(s.SetpointSCCM-v) > 0.01 {
		return fmt.Errorf("%s: setpoint reads %g, sent %g: %w", m.name, s.SetpointSCCM, v, device.ErrReadback)
	}
	return nil
}

func (m *simMFC) Halt(context.Context) error {
	m.p.RecordWrite(m.name, via, "hold", 1, true)
	if err := m.p.SetMFCHold(m.gas, true); err != nil {
		return errSim(m.name, err)
	}
	if err := m.p.SetMFCSetpoint(m.gas, 0); err != nil {
		return errSim(m.name, err)
	}
	return nil
}

// simGauge is the vacuum gauge, with the measuring range of the real one.
type simGauge struct {
	p     *plant.Plant
	clock *Clock
	name  string
}

// The gauge's measuring range (firmware-sim/serialsim/tpg.go).
const (
	gaugeMin = 5.0e-9 * device.Millibar
	gaugeMax = 1.0e3 * device.Millibar
)

func (g *simGauge) String() string             { return g.name }
func (g *simGauge) Halt(context.Context) error { return nil }

func (g *simGauge) ReadPressure(context.Context) (device.PressureReading, error) {
	now := g.clock.Now()
	pa := device.Pressure(g.p.ChamberPressure())
	r := device.PressureReading{Pressure: pa, Status: device.GaugeOK, At: now, Sent: now}
	switch {
	case math.IsNaN(float64(pa)):
		r.Status, r.Pressure = device.GaugeSensorError, gaugeMax
		return r, fmt.Errorf("%s: %v: %w", g.name, r.Status, device.ErrSensor)
	case pa < gaugeMin:
		r.Status, r.Pressure = device.GaugeUnderrange, gaugeMin
	case pa > gaugeMax:
		r.Status, r.Pressure = device.GaugeOverrange, gaugeMax
	}
	return r, nil
}

// simCoil is one coil of the digital I/O module.
type simCoil struct {
	p     *plant.Plant
	name  string
	addr  int
	safe  bool
	clock *Clock
}

func (s *simCoil) String() string  { return s.name }
func (s *simCoil) SafeState() bool { return s.safe }

func (s *simCoil) Set(ctx context.Context, on bool) error {
	if err := s.p.DIOWriteCoils(via, s.addr, []bool{on}); err != nil {
		return errSim(s.name, err)
	}
	got, err := s.State(ctx)
	if err != nil {
		return err
	}
	if got != on {
		return fmt.Errorf("%s: set %v, reads %v: %w", s.name, on, got, device.ErrReadback)
	}
	return nil
}

func (s *simCoil) State(context.Context) (bool, error) {
	v := make([]bool, 1)
	if err := s.p.DIOReadCoils(s.addr, v); err != nil {
		return false, errSim(s.name, err)
	}
	return v[0], nil
}

func (s *simCoil) Halt(ctx context.Context) error { return s.Set(ctx, s.safe) }

// simInput is one discrete input of the digital I/O module.
type simInput struct {
	p    *plant.Plant
	name string
	addr int
}

func (s *simInput) String() string { return s.name }

func (s *simInput) Read(context.Context) (bool, error) {
	v := make([]bool, 1)
	if err := s.p.DIOReadInputs(s.addr, v); err != nil {
		return false, errSim(s.name, err)
	}
	return v[0], nil
}

// simPin is a virtual GPIO line read as an input (e-stop, leak, relay
// feedback); activeLow inverts it.
type simPin struct {
	p         *plant.Plant
	name, pin string
	activeLow bool
}

func (s *simPin) String() string { return s.name }

func (s *simPin) Read(context.Context) (bool, error) {
	l, err := s.p.GPIOLevel(s.pin)
	if err != nil {
		return false, errSim(s.name, err)
	}
	return l != s.activeLow, nil
}

// simRelay is the interlock relay on its GPIO line, read back on relay_fb.
type simRelay struct{ p *plant.Plant }

func (s *simRelay) String() string  { return "relay" }
func (s *simRelay) SafeState() bool { return false }

func (s *simRelay) Set(ctx context.Context, on bool) error {
	if err := s.p.SetGPIO(plant.PinRelay, on); err != nil {
		return errSim("relay", err)
	}
	got, err := s.State(ctx)
	if err != nil {
		return err
	}
	if got != on {
		return fmt.Errorf("relay: set %v, feedback reads %v: %w", on, got, device.ErrReadback)
	}
	return nil
}

func (s *simRelay) State(context.Context) (bool, error) {
	l, err := s.p.GPIOLevel(plant.PinRelayFB)
	if err != nil {
		return false, errSim("relay", err)
	}
	return l, nil
}

func (s *simRelay) Halt(ctx context.Context) error { return s.Set(ctx, false) }

// simSpectrometer acquires the spectrum of what has grown, as the
// simulator's Raman firmware synthesizes it; the acquisition takes its
// integration time of virtual time.
type simSpectrometer struct {
	p     *plant.Plant
	clock *Clock
	name  string
	seed  uint64
	n     uint64
}

func (s *simSpectrometer) String() string             { return s.name }
func (s *simSpectrometer) Halt(context.Context) error { return nil }

func (s *simSpectrometer) Acquire(ctx context.Context, integration time.Duration) (device.Spectrum, error) {
	if err := ctx.Err(); err != nil {
		return device.Spectrum{}, err
	}
	ms := int(integration / time.Millisecond)
	if ms < 10 || ms > 60000 {
		return device.Spectrum{}, fmt.Errorf("%s: integration %v outside 10 ms..60 s: %w", s.name, integration, device.ErrOutOfRange)
	}
	s.p.RecordWrite(s.name, via, "acquire", float64(ms), true)
	s.clock.pass(integration)
	s.n++
	shift, counts := serialsim.SpectrumOf(s.p.Rig(), s.p.Film(), ms, s.seed+s.n)
	sp := device.Spectrum{Shift: shift, Counts: make([]float64, len(counts)), Integration: integration, At: s.clock.Now()}
	for i, c := range counts {
		sp.Counts[i] = float64(c)
	}
	return sp, nil
}

var (
	_ device.TemperatureController = (*simFurnace)(nil)
	_ device.FlowController        = (*simMFC)(nil)
	_ device.PressureGauge         = (*simGauge)(nil)
	_ device.Switch                = (*simCoil)(nil)
	_ device.Switch                = (*simRelay)(nil)
	_ device.DigitalInput          = (*simInput)(nil)
	_ device.DigitalInput          = (*simPin)(nil)
	_ device.Spectrometer          = (*simSpectrometer)(nil)
)
