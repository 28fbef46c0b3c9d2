package devicetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"hcp-edge/device"
)

// Call is one recorded method call on a fake.
type Call struct {
	Method string // method name, e.g. "SetSetpoint"
	Args   []any  // arguments after the context, e.g. device.Temperature
}

// Recorder is embedded in every fake: it records calls, serves injected errors
// and counts Halt calls. Its methods are safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
	errs  map[string]error
}

// Calls returns a copy of every call recorded so far, in order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Count returns how many times method was called.
func (r *Recorder) Count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Halted reports how many times Halt was called (whether or not it failed).
func (r *Recorder) Halted() int { return r.Count("Halt") }

// SetErr makes every later call of method return err (wrapped with the fake's
// name); nil clears it. The call is still recorded, and has no other effect.
func (r *Recorder) SetErr(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs == nil {
		r.errs = map[string]error{}
	}
	if err == nil {
		delete(r.errs, method)
		return
	}
	r.errs[method] = err
}

// ResetCalls forgets the recorded calls (injected errors stay).
func (r *Recorder) ResetCalls() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// record appends the call and returns the error the call must fail with: the
// context's (wrapping device.ErrTimeout) or the injected one.
func (r *Recorder) record(ctx context.Context, name, method string, args ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Method: method, Args: args})
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %s: %w: %w", name, method, device.ErrTimeout, err)
		}
	}
	if err := r.errs[method]; err != nil {
		return fmt.Errorf("%s: %s: %w", name, method, err)
	}
	return nil
}

func clockOrReal(c Clock) Clock {
	if c == nil {
		return RealClock()
	}
	return c
}

// FakeFurnace is a device.TemperatureController with a trivial thermal
// response: each Status call moves the process value by Response (0..1) of the
// way towards the setpoint when the heater is on, towards Ambient when it is
// off. With Response 0 (the default) the process value only changes through
// SetProcessValue. The ramp is ignored: the working setpoint equals the
// setpoint. Halt disables the heater.
type FakeFurnace struct {
	Recorder
	// Name is returned by String.
	Name string
	// Clock stamps the statuses (RealClock when nil). Set before use.
	Clock Clock
	// Min and Max bound the setpoint (defaults 0 and 1200 °C); a setpoint
	// outside them fails with device.ErrOutOfRange. Set before use.
	Min, Max device.Temperature

	mu       sync.Mutex
	st       device.FurnaceStatus
	response float64
	ambient  device.Temperature
}

// NewFakeFurnace returns a furnace at 25 °C, setpoint 25 °C, heater off.
func NewFakeFurnace(name string) *FakeFurnace {
	amb := device.Celsius(25)
	return &FakeFurnace{
		Name: name, Min: device.Celsius(0), Max: device.Celsius(1200),
		st:      device.FurnaceStatus{ProcessValue: amb, Setpoint: amb, WorkingSetpoint: amb},
		ambient: amb,
	}
}

func (f *FakeFurnace) String() string { return f.Name }

// SetProcessValue sets the measured temperature.
func (f *FakeFurnace) SetProcessValue(t device.Temperature) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.ProcessValue = t
}

// SetAlarms sets the alarm bits; AlarmSensorBreak makes Status fail with
// device.ErrSensor.
func (f *FakeFurnace) SetAlarms(a device.FurnaceAlarm) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Alarms = a
}

// SetResponse sets the fraction (clamped to 0..1) of the distance to its target
// the process value covers on each Status call, and the ambient temperature it
// falls back to with the heater off.
func (f *FakeFurnace) SetResponse(fraction float64, ambient device.Temperature) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.response = min(max(fraction, 0), 1)
	f.ambient = ambient
}

// Snapshot returns the current state without recording a call or applying the
// thermal response.
func (f *FakeFurnace) Snapshot() device.FurnaceStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

// Status implements device.TemperatureController.
func (f *FakeFurnace) Status(ctx context.Context) (device.FurnaceStatus, error) {
	if err := f.record(ctx, f.Name, "Status"); err != nil {
		return device.FurnaceStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.ambient
	if f.st.HeaterEnabled {
		target = f.st.Setpoint
	}
	f.st.ProcessValue += device.Temperature(f.response) * (target - f.st.ProcessValue)
	f.st.OutputPower = 0
	if f.st.HeaterEnabled && f.st.ProcessValue < f.st.Setpoint {
		f.st.OutputPower = 100
	}
	f.st.At = clockOrReal(f.Clock).Now()
	if f.st.Alarms&device.AlarmSensorBreak != 0 {
		return f.st, fmt.Errorf("%s: thermocouple open: %w", f.Name, device.ErrSensor)
	}
	return f.st, nil
}

// SetSetpoint implements device.TemperatureController.
func (f *FakeFurnace) SetSetpoint(ctx context.Context, t device.Temperature) error {
	if err := f.record(ctx, f.Name, "SetSetpoint", t); err != nil {
		return err
	}
	if !device.Finite(float64(t)) || t < f.Min || t > f.Max {
		return fmt.Errorf("%s: setpoint %v outside %v..%v: %w", f.Name, t, f.Min, f.Max, device.ErrOutOfRange)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Setpoint, f.st.WorkingSetpoint = t, t
	return nil
}

// SetRampRate implements device.TemperatureController.
func (f *FakeFurnace) SetRampRate(ctx context.Context, r device.TemperatureRate) error {
	if err := f.record(ctx, f.Name, "SetRampRate", r); err != nil {
		return err
	}
	if !device.Finite(float64(r)) || r < 0 {
		return fmt.Errorf("%s: ramp rate %v: %w", f.Name, r, device.ErrOutOfRange)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.RampRate = r
	return nil
}

// SetHeater implements device.TemperatureController.
func (f *FakeFurnace) SetHeater(ctx context.Context, on bool) error {
	if err := f.record(ctx, f.Name, "SetHeater", on); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.HeaterEnabled = on
	f.st.Alarms &^= device.AlarmWatchdog
	return nil
}

// KickWatchdog implements device.TemperatureController; it only records the call.
func (f *FakeFurnace) KickWatchdog(ctx context.Context) error {
	return f.record(ctx, f.Name, "KickWatchdog")
}

// Halt disables the heater (and records the call, even when it fails).
func (f *FakeFurnace) Halt(ctx context.Context) error {
	if err := f.record(ctx, f.Name, "Halt"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.HeaterEnabled = false
	f.st.OutputPower = 0
	return nil
}

// FakeFlow is a device.FlowController. The measured flow follows the setpoint
// unless SetMeasured overrides it; a setpoint that is negative, not finite or
// above full scale fails with device.ErrOutOfRange. Halt sets the setpoint to 0.
type FakeFlow struct {
	Recorder
	// Name is returned by String.
	Name string
	// Clock stamps the readings (RealClock when nil). Set before use.
	Clock Clock

	mu        sync.Mutex
	gas       string
	fullScale device.Flow
	setpoint  device.Flow
	measured  *device.Flow
	flags     []string
}

// NewFakeFlow returns a controller for gas with the given full scale, setpoint 0.
func NewFakeFlow(name, gas string, fullScale device.Flow) *FakeFlow {
	return &FakeFlow{Name: name, gas: gas, fullScale: fullScale}
}

func (f *FakeFlow) String() string { return f.Name }

// FullScale implements device.FlowController.
func (f *FakeFlow) FullScale() device.Flow { return f.fullScale }

// SetMeasured makes ReadFlow report flow whatever the setpoint; nil restores
// "flow follows the setpoint".
func (f *FakeFlow) SetMeasured(flow *device.Flow) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.measured = flow
}

// SetFlags sets the status codes ReadFlow reports (e.g. "MOV").
func (f *FakeFlow) SetFlags(flags ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flags = slices.Clone(flags)
}

// Setpoint returns the current setpoint without recording a call.
func (f *FakeFlow) Setpoint() device.Flow {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.setpoint
}

// ReadFlow implements device.FlowController.
func (f *FakeFlow) ReadFlow(ctx context.Context) (device.FlowStatus, error) {
	if err := f.record(ctx, f.Name, "ReadFlow"); err != nil {
		return device.FlowStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	flow := f.setpoint
	if f.measured != nil {
		flow = *f.measured
	}
	return device.FlowStatus{
		Gas: f.gas, Flow: flow, Setpoint: f.setpoint,
		Pressure: device.Atmosphere, Temperature: device.Celsius(25),
		Flags: slices.Clone(f.flags), At: clockOrReal(f.Clock).Now(),
	}, nil
}

// SetFlow implements device.FlowController.
func (f *FakeFlow) SetFlow(ctx context.Context, flow device.Flow) error {
	if err := f.record(ctx, f.Name, "SetFlow", flow); err != nil {
		return err
	}
	if !device.Finite(float64(flow)) || flow < 0 || flow > f.fullScale {
		return fmt.Errorf("%s: flow %v outside 0..%v: %w", f.Name, flow, f.fullScale, device.ErrOutOfRange)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setpoint = flow
	return nil
}

// Halt sets the setpoint to zero (and records the call, even when it fails).
func (f *FakeFlow) Halt(ctx context.Context) error {
	if err := f.record(ctx, f.Name, "Halt"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setpoint = 0
	return nil
}

// FakeGauge is a device.PressureGauge with a settable reading (1000 mbar, OK,
// to start with). A status other than OK, underrange or overrange makes
// ReadPressure fail with device.ErrSensor (together with the reading). Halt
// only records the call.
type FakeGauge struct {
	Recorder
	// Name is returned by String.
	Name string
	// Clock stamps the readings (RealClock when nil). Set before use.
	Clock Clock

	mu     sync.Mutex
	p      device.Pressure
	status device.GaugeStatus
}

// NewFakeGauge returns a gauge reading 1000 mbar.
func NewFakeGauge(name string) *FakeGauge {
	return &FakeGauge{Name: name, p: 1000 * device.Millibar}
}

func (g *FakeGauge) String() string { return g.Name }

// SetReading sets what ReadPressure reports.
func (g *FakeGauge) SetReading(p device.Pressure, status device.GaugeStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p, g.status = p, status
}

// ReadPressure implements device.PressureGauge.
func (g *FakeGauge) ReadPressure(ctx context.Context) (device.PressureReading, error) {
	if err := g.record(ctx, g.Name, "ReadPressure"); err != nil {
		return device.PressureReading{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r := device.PressureReading{Pressure: g.p, Status: g.status, At: clockOrReal(g.Clock).Now()}
	switch g.status {
	case device.GaugeOK, device.GaugeUnderrange, device.GaugeOverrange:
		return r, nil
	}
	return r, fmt.Errorf("%s: gauge status %v: %w", g.Name, g.status, device.ErrSensor)
}

// Halt implements device.Instrument; a gauge has nothing to make safe.
func (g *FakeGauge) Halt(ctx context.Context) error { return g.record(ctx, g.Name, "Halt") }

// FakeSwitch is a device.Switch. Set changes the level unless Stick has stuck
// it, in which case a Set to the other level fails with device.ErrReadback.
// Halt drives it to its safe level (with the same read-back rule).
type FakeSwitch struct {
	Recorder
	// Name is returned by String.
	Name string

	mu    sync.Mutex
	safe  bool
	on    bool
	stuck *bool
}

// NewFakeSwitch returns a switch whose safe level is safe, starting at it.
func NewFakeSwitch(name string, safe bool) *FakeSwitch {
	return &FakeSwitch{Name: name, safe: safe, on: safe}
}

func (s *FakeSwitch) String() string { return s.Name }

// SafeState implements device.Switch.
func (s *FakeSwitch) SafeState() bool { return s.safe }

// Stick makes the output stuck at level (a welded relay, a jammed valve).
func (s *FakeSwitch) Stick(level bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on, s.stuck = level, &level
}

// Unstick frees a stuck output.
func (s *FakeSwitch) Unstick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stuck = nil
}

// Level returns the current level without recording a call.
func (s *FakeSwitch) Level() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

func (s *FakeSwitch) set(on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stuck != nil && *s.stuck != on {
		return fmt.Errorf("%s: wrote %t, read back %t: %w", s.Name, on, *s.stuck, device.ErrReadback)
	}
	s.on = on
	return nil
}

// Set implements device.Switch.
func (s *FakeSwitch) Set(ctx context.Context, on bool) error {
	if err := s.record(ctx, s.Name, "Set", on); err != nil {
		return err
	}
	return s.set(on)
}

// State implements device.Switch.
func (s *FakeSwitch) State(ctx context.Context) (bool, error) {
	if err := s.record(ctx, s.Name, "State"); err != nil {
		return false, err
	}
	return s.Level(), nil
}

// Halt drives the switch to its safe level (and records the call).
func (s *FakeSwitch) Halt(ctx context.Context) error {
	if err := s.record(ctx, s.Name, "Halt"); err != nil {
		return err
	}
	return s.set(s.safe)
}

// FakeInput is a device.DigitalInput whose level the test sets.
type FakeInput struct {
	Recorder
	// Name is returned by String.
	Name string

	mu sync.Mutex
	on bool
}

// NewFakeInput returns an input reading level.
func NewFakeInput(name string, level bool) *FakeInput { return &FakeInput{Name: name, on: level} }

func (i *FakeInput) String() string { return i.Name }

// Set sets what Read returns.
func (i *FakeInput) Set(level bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.on = level
}

// Read implements device.DigitalInput.
func (i *FakeInput) Read(ctx context.Context) (bool, error) {
	if err := i.record(ctx, i.Name, "Read"); err != nil {
		return false, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.on, nil
}

// FakeSpectrometer is a device.Spectrometer returning a settable spectrum (a
// flat one, 150..550 cm^-1 in 0.5 steps at 100 counts, to start with). An
// integration time <= 0 fails with device.ErrOutOfRange. Acquire returns at
// once; it does not wait for the integration time. Halt only records the call.
type FakeSpectrometer struct {
	Recorder
	// Name is returned by String.
	Name string
	// Clock stamps the spectra (RealClock when nil). Set before use.
	Clock Clock

	mu sync.Mutex
	sp device.Spectrum
}

// NewFakeSpectrometer returns a spectrometer with a flat spectrum.
func NewFakeSpectrometer(name string) *FakeSpectrometer {
	var sp device.Spectrum
	for i := range 801 {
		sp.Shift = append(sp.Shift, 150+float64(i)*0.5)
		sp.Counts = append(sp.Counts, 100)
	}
	return &FakeSpectrometer{Name: name, sp: sp}
}

func (s *FakeSpectrometer) String() string { return s.Name }

// SetSpectrum sets the shifts and counts Acquire returns (copied).
func (s *FakeSpectrometer) SetSpectrum(shift, counts []float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sp.Shift, s.sp.Counts = slices.Clone(shift), slices.Clone(counts)
}

// Acquire implements device.Spectrometer.
func (s *FakeSpectrometer) Acquire(ctx context.Context, integration time.Duration) (device.Spectrum, error) {
	if err := s.record(ctx, s.Name, "Acquire", integration); err != nil {
		return device.Spectrum{}, err
	}
	if integration <= 0 {
		return device.Spectrum{}, fmt.Errorf("%s: integration %v: %w", s.Name, integration, device.ErrOutOfRange)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return device.Spectrum{
		Shift: slices.Clone(s.sp.Shift), Counts: slices.Clone(s.sp.Counts),
		Integration: integration, At: clockOrReal(s.Clock).Now(),
	}, nil
}

// Halt stops the (instant) acquisition; it only records the call.
func (s *FakeSpectrometer) Halt(ctx context.Context) error { return s.record(ctx, s.Name, "Halt") }

var (
	_ device.TemperatureController = (*FakeFurnace)(nil)
	_ device.FlowController        = (*FakeFlow)(nil)
	_ device.PressureGauge         = (*FakeGauge)(nil)
	_ device.Switch                = (*FakeSwitch)(nil)
	_ device.DigitalInput          = (*FakeInput)(nil)
	_ device.Spectrometer          = (*FakeSpectrometer)(nil)
)
