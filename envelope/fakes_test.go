package envelope

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"hcp-edge/device"
)

// plant is the state behind the fake instruments, with a log of every write
// that reached them and the plant as it was at that write.
type plant struct {
	mu sync.Mutex
	plantState
	fail   map[string]bool // instrument name → reads and writes fail
	writes []write
	halts  []string
}

type plantState struct {
	now      time.Time
	furnace  device.FurnaceStatus
	pressure device.PressureReading
	flows    map[string]device.FlowStatus
	switches map[string]bool
	inputs   map[string]bool
}

type write struct {
	channel string
	value   float64
	before  plantState // a copy
}

func newPlant(now time.Time) *plant {
	p := &plant{plantState: plantState{now: now, flows: map[string]device.FlowStatus{}, switches: map[string]bool{},
		inputs: map[string]bool{}}, fail: map[string]bool{}}
	p.furnace = device.FurnaceStatus{ProcessValue: device.Celsius(25), Setpoint: device.Celsius(25), RampRate: 5}
	p.pressure = device.PressureReading{Pressure: 0.5 * device.Millibar, Status: device.GaugeOK}
	for _, g := range SimRigSpec().Gases {
		p.flows[g.Gas] = device.FlowStatus{Gas: g.Gas}
	}
	for _, s := range SimRigSpec().Switches {
		p.switches[s.Name] = s.SafeState
	}
	p.inputs["door_closed"], p.inputs["exhaust_ok"] = true, true
	return p
}

func (p *plant) clock() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now
}

func (p *plant) advance(d time.Duration) {
	p.mu.Lock()
	p.now = p.now.Add(d)
	p.mu.Unlock()
}

func (p *plant) snapshotLocked() plantState {
	c := plantState{now: p.now, furnace: p.furnace, pressure: p.pressure, flows: map[string]device.FlowStatus{},
		switches: map[string]bool{}, inputs: map[string]bool{}}
	for k, v := range p.flows {
		c.flows[k] = v
	}
	for k, v := range p.switches {
		c.switches[k] = v
	}
	for k, v := range p.inputs {
		c.inputs[k] = v
	}
	return c
}

// do runs f under the lock unless the instrument fails; a write is logged.
func (p *plant) do(ctx context.Context, name, channel string, value float64, isWrite bool, f func()) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, device.ErrTimeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail[name] {
		return fmt.Errorf("%s: %w", name, device.ErrTimeout)
	}
	if isWrite {
		p.writes = append(p.writes, write{channel: channel, value: value, before: p.snapshotLocked()})
	}
	f()
	return nil
}

func (p *plant) writeCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.writes)
}

func (p *plant) halt(name string, f func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.halts = append(p.halts, name)
	f()
	return nil
}

type fakeFurnace struct{ p *plant }

func (f fakeFurnace) String() string { return "furnace" }
func (f fakeFurnace) Halt(context.Context) error {
	return f.p.halt("furnace", func() { f.p.furnace.HeaterEnabled = false })
}
func (f fakeFurnace) Status(ctx context.Context) (device.FurnaceStatus, error) {
	var st device.FurnaceStatus
	err := f.p.do(ctx, "furnace", "", 0, false, func() { st = f.p.furnace; st.At = f.p.now })
	return st, err
}
func (f fakeFurnace) SetSetpoint(ctx context.Context, t device.Temperature) error {
	return f.p.do(ctx, "furnace", ChannelSetpoint, float64(t), true, func() { f.p.furnace.Setpoint = t })
}
func (f fakeFurnace) SetRampRate(ctx context.Context, r device.TemperatureRate) error {
	return f.p.do(ctx, "furnace", ChannelRampRate, float64(r), true, func() { f.p.furnace.RampRate = r })
}
func (f fakeFurnace) SetHeater(ctx context.Context, on bool) error {
	return f.p.do(ctx, "furnace", ChannelHeater, boolValue(on), true, func() { f.p.furnace.HeaterEnabled = on })
}
func (f fakeFurnace) KickWatchdog(ctx context.Context) error { return nil }

var _ device.TemperatureController = fakeFurnace{}

type fakeFlow struct {
	p   *plant
	gas string
	fs  device.Flow
}

func (f fakeFlow) String() string         { return "mfc-" + f.gas }
func (f fakeFlow) FullScale() device.Flow { return f.fs }
func (f fakeFlow) Halt(context.Context) error {
	return f.p.halt(f.String(), func() { f.p.flows[f.gas] = device.FlowStatus{Gas: f.gas} })
}
func (f fakeFlow) ReadFlow(ctx context.Context) (device.FlowStatus, error) {
	var st device.FlowStatus
	err := f.p.do(ctx, f.String(), "", 0, false, func() { st = f.p.flows[f.gas]; st.At = f.p.now })
	return st, err
}
func (f fakeFlow) SetFlow(ctx context.Context, v device.Flow) error {
	if v < 0 || v > f.fs {
		return fmt.Errorf("%s: %w", f, device.ErrOutOfRange)
	}
	return f.p.do(ctx, f.String(), FlowChannel(f.gas), float64(v), true, func() {
		st := f.p.flows[f.gas]
		st.Setpoint, st.Flow = v, v
		f.p.flows[f.gas] = st
	})
}

var _ device.FlowController = fakeFlow{}

type fakeGauge struct{ p *plant }

func (g fakeGauge) String() string             { return "gauge" }
func (g fakeGauge) Halt(context.Context) error { return g.p.halt("gauge", func() {}) }
func (g fakeGauge) ReadPressure(ctx context.Context) (device.PressureReading, error) {
	var r device.PressureReading
	err := g.p.do(ctx, "gauge", "", 0, false, func() { r = g.p.pressure; r.At = g.p.now })
	if err == nil && r.Status >= device.GaugeSensorError {
		err = fmt.Errorf("gauge: %s: %w", r.Status, device.ErrSensor)
	}
	return r, err
}

type fakeSwitch struct {
	p    *plant
	name string
	safe bool
	// stuck: Set reports success but the output does not move (read-back fails).
	stuck bool
}

func (s *fakeSwitch) String() string  { return s.name }
func (s *fakeSwitch) SafeState() bool { return s.safe }
func (s *fakeSwitch) Halt(context.Context) error {
	return s.p.halt(s.name, func() { s.p.switches[s.name] = s.safe })
}
func (s *fakeSwitch) Set(ctx context.Context, on bool) error {
	return s.p.do(ctx, s.name, SwitchChannel(s.name), boolValue(on), true, func() {
		if !s.stuck {
			s.p.switches[s.name] = on
		}
	})
}
func (s *fakeSwitch) State(ctx context.Context) (bool, error) {
	var on bool
	err := s.p.do(ctx, s.name, "", 0, false, func() { on = s.p.switches[s.name] })
	return on, err
}

var _ device.Switch = (*fakeSwitch)(nil)

type fakeInput struct {
	p    *plant
	name string
}

func (i fakeInput) String() string { return i.name }
func (i fakeInput) Read(ctx context.Context) (bool, error) {
	var on bool
	err := i.p.do(ctx, i.name, "", 0, false, func() { on = i.p.inputs[i.name] })
	return on, err
}

type fakeSpectrometer struct{ p *plant }

func (s fakeSpectrometer) String() string { return "raman" }
func (s fakeSpectrometer) Halt(context.Context) error {
	return s.p.halt("raman", func() {})
}
func (s fakeSpectrometer) Acquire(ctx context.Context, d time.Duration) (device.Spectrum, error) {
	var sp device.Spectrum
	err := s.p.do(ctx, "raman", ChannelIntegration, d.Seconds(), true, func() {
		sp = device.Spectrum{Shift: []float64{150, 550}, Counts: []float64{1, 2}, Integration: d, At: s.p.now}
	})
	return sp, err
}

func fakeRig(p *plant) (Rig, map[string]*fakeSwitch) {
	rig := Rig{Furnace: fakeFurnace{p}, Gauge: fakeGauge{p}, Flows: map[string]device.FlowController{},
		Switches: map[string]device.Switch{}, Inputs: map[string]device.DigitalInput{}, Spectrometer: fakeSpectrometer{p}}
	sws := map[string]*fakeSwitch{}
	spec := SimRigSpec()
	for _, g := range spec.Gases {
		rig.Flows[g.Gas] = fakeFlow{p: p, gas: g.Gas, fs: g.FullScale}
	}
	for _, s := range spec.Switches {
		sw := &fakeSwitch{p: p, name: s.Name, safe: s.SafeState}
		sws[s.Name] = sw
		rig.Switches[s.Name] = sw
	}
	for _, in := range spec.Inputs {
		rig.Inputs[in] = fakeInput{p: p, name: in}
	}
	return rig, sws
}

var errBadToken = errors.New("token expired")

// tokens authorises "ok" as session s-1 and refuses anything else.
type tokens struct{}

func (tokens) Authorize(_ context.Context, token string, _ Action) (Grant, error) {
	if token != "ok" {
		return Grant{}, errBadToken
	}
	return Grant{SessionID: "s-1"}, nil
}

func (tokens) Authenticate(ctx context.Context, token string) (Grant, error) {
	return tokens{}.Authorize(ctx, token, Action{})
}

type auditLog struct {
	mu      sync.Mutex
	entries []Entry
	fail    bool
}

func (a *auditLog) Record(_ context.Context, e Entry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail {
		return errors.New("disk full")
	}
	a.entries = append(a.entries, e)
	return nil
}

func (a *auditLog) last() Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.entries) == 0 {
		return Entry{}
	}
	return a.entries[len(a.entries)-1]
}

func (a *auditLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}
