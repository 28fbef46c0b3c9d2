package furnace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
)

// Bus is what the controller needs from a Modbus line; *modbus.Bus has it.
type Bus interface {
	ReadHoldingRegisters(ctx context.Context, unit byte, addr, qty uint16) ([]uint16, error)
	ReadInputRegisters(ctx context.Context, unit byte, addr, qty uint16) ([]uint16, error)
	WriteSingleRegister(ctx context.Context, unit byte, addr, value uint16) error
	WriteMultipleRegisters(ctx context.Context, unit byte, addr uint16, values []uint16) error
}

var _ Bus = (*modbus.Bus)(nil)

// Registers is the controller's register map. Input registers: PV,
// WorkingSetpoint, OutputPower, Alarms, PVFloat, Uptime, Status; holding
// registers: Setpoint, RampRate, HeaterEnable, WatchdogTimeout, WatchdogKick,
// AlarmLimit. Temperatures are in °C, ramp rates in °C/min, power in %, the
// watchdog timeout in ms, uptime in s (after Scale and Offset).
type Registers struct {
	PV, WorkingSetpoint, OutputPower, Alarms, PVFloat, Uptime, Status           modbus.RegisterSpec
	Setpoint, RampRate, HeaterEnable, WatchdogTimeout, WatchdogKick, AlarmLimit modbus.RegisterSpec
}

// DefaultRegisters is the map of configs/rig-protocols.md (unit 1).
func DefaultRegisters() Registers {
	in := func(a uint16, t modbus.Type, scale float64) modbus.RegisterSpec {
		return modbus.RegisterSpec{Table: modbus.Input, Address: a, Type: t, Scale: scale}
	}
	hr := func(a uint16, t modbus.Type, scale float64) modbus.RegisterSpec {
		return modbus.RegisterSpec{Table: modbus.Holding, Address: a, Type: t, Scale: scale}
	}
	r := Registers{
		PV:              in(0, modbus.Int16, 0.1),
		WorkingSetpoint: in(1, modbus.Int16, 0.1),
		OutputPower:     in(2, modbus.Uint16, 0.1),
		Alarms:          in(3, modbus.Uint16, 1),
		PVFloat:         in(4, modbus.Float32, 1),
		Uptime:          in(6, modbus.Uint32, 1),
		Status:          in(8, modbus.Uint16, 1),
		Setpoint:        hr(0, modbus.Int16, 0.1),
		RampRate:        hr(1, modbus.Uint16, 0.1),
		HeaterEnable:    hr(2, modbus.Uint16, 1),
		WatchdogTimeout: hr(3, modbus.Uint16, 1),
		WatchdogKick:    hr(4, modbus.Uint16, 1),
		AlarmLimit:      hr(5, modbus.Int16, 0.1),
	}
	r.Uptime.WordOrder = modbus.LowWordFirst
	return r
}

func (r Registers) inputs() []modbus.RegisterSpec {
	return []modbus.RegisterSpec{r.PV, r.WorkingSetpoint, r.OutputPower, r.Alarms, r.PVFloat, r.Uptime, r.Status}
}

func (r Registers) holdings() []modbus.RegisterSpec {
	return []modbus.RegisterSpec{r.Setpoint, r.RampRate, r.HeaterEnable, r.WatchdogTimeout, r.WatchdogKick, r.AlarmLimit}
}

// Opts configures a Controller.
type Opts struct {
	Name      string // for errors and logs; default "furnace"
	Unit      byte   // Modbus unit id; default 1
	Registers Registers
	// The controller's own ranges; values outside are refused with
	// device.ErrOutOfRange before anything is sent.
	SetpointMin, SetpointMax device.Temperature
	RampMax                  device.TemperatureRate
	AlarmLimitMax            device.Temperature
	WatchdogMin, WatchdogMax time.Duration
	Logger                   *slog.Logger // for the watchdog kicker; default slog.Default()
}

// DefaultOpts returns the rig's furnace controller: unit 1, the documented
// map, setpoint 0..1200 °C, ramp ≤ 100 °C/min, alarm limit ≤ 1300 °C, watchdog
// 100 ms..60 s (or 0, disabled).
func DefaultOpts() Opts {
	return Opts{
		Name:          "furnace",
		Unit:          1,
		Registers:     DefaultRegisters(),
		SetpointMin:   device.Celsius(0),
		SetpointMax:   device.Celsius(1200),
		RampMax:       device.KelvinPerMinute(100),
		AlarmLimitMax: device.Celsius(1300),
		WatchdogMin:   100 * time.Millisecond,
		WatchdogMax:   60 * time.Second,
	}
}

// Controller is the furnace temperature controller over Modbus.
type Controller struct {
	bus  Bus
	o    Opts
	kick uint16

	mu     sync.Mutex // guards kick, cancel
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ device.TemperatureController = (*Controller)(nil)

// New returns a Controller on bus. It sends nothing.
func New(bus Bus, o Opts) (*Controller, error) {
	if bus == nil {
		return nil, errors.New("furnace: nil bus")
	}
	if o.Name == "" {
		o.Name = "furnace"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	for _, s := range o.Registers.inputs() {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: input register map: %w", o.Name, err)
		}
		if s.IsBit() {
			return nil, fmt.Errorf("%s: %s is not a register", o.Name, s)
		}
	}
	for _, s := range o.Registers.holdings() {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: holding register map: %w", o.Name, err)
		}
		if s.Table != modbus.Holding {
			return nil, fmt.Errorf("%s: %s must be a holding register", o.Name, s)
		}
	}
	if o.SetpointMax < o.SetpointMin || o.RampMax < 0 || o.WatchdogMax < o.WatchdogMin {
		return nil, fmt.Errorf("%s: inconsistent ranges", o.Name)
	}
	return &Controller{bus: bus, o: o}, nil
}

// String names the controller.
func (c *Controller) String() string { return c.o.Name }

// Snapshot is everything the controller reports, beyond device.FurnaceStatus.
type Snapshot struct {
	device.FurnaceStatus
	PVFloat         float64 // PV as the float32 register reports it, °C (NaN on sensor break)
	Uptime          time.Duration
	HeaterActive    bool // status bit 0: output active (enabled, watchdog alive, relay permitting)
	Ramping         bool // status bit 1
	RelayPermits    bool // status bit 2
	WatchdogTimeout time.Duration
	AlarmLimit      device.Temperature
}

// block reads the span of specs from one table in one transaction (or one per
// spec when the span exceeds 125 registers).
func (c *Controller) block(ctx context.Context, table modbus.Table, specs []modbus.RegisterSpec) (func(modbus.RegisterSpec) (float64, []uint16, error), error) {
	lo, hi := uint16(math.MaxUint16), uint16(0)
	for _, s := range specs {
		lo = min(lo, s.Address)
		hi = max(hi, s.Address+s.Words()-1)
	}
	read := c.bus.ReadInputRegisters
	if table == modbus.Holding {
		read = c.bus.ReadHoldingRegisters
	}
	if int(hi)-int(lo)+1 <= 125 {
		words, err := read(ctx, c.o.Unit, lo, hi-lo+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.o.Name, err)
		}
		return func(s modbus.RegisterSpec) (float64, []uint16, error) {
			v, err := s.DecodeFrom(words, lo)
			if err != nil {
				return 0, nil, err
			}
			return v, words[s.Address-lo:], nil
		}, nil
	}
	got := map[uint16][]uint16{}
	for _, s := range specs {
		w, err := read(ctx, c.o.Unit, s.Address, s.Words())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.o.Name, err)
		}
		got[s.Address] = w
	}
	return func(s modbus.RegisterSpec) (float64, []uint16, error) {
		v, err := s.Decode(got[s.Address])
		return v, got[s.Address], err
	}, nil
}

// Snapshot reads the input registers and the holding registers in one
// transaction each (with the default map) and decodes them. On a sensor break
// (alarm bit 1, PV 0x7FFF or a NaN float PV) it returns the snapshot together
// with an error wrapping device.ErrSensor.
func (c *Controller) Snapshot(ctx context.Context) (Snapshot, error) {
	r := c.o.Registers
	in, err := c.block(ctx, modbus.Input, r.inputs())
	if err != nil {
		return Snapshot{}, err
	}
	hr, err := c.block(ctx, modbus.Holding, r.holdings())
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	var errs []error
	dec := func(f func(modbus.RegisterSpec) (float64, []uint16, error), spec modbus.RegisterSpec) (float64, []uint16) {
		v, w, err := f(spec)
		if err != nil {
			errs = append(errs, err)
		}
		return v, w
	}
	pv, pvWords := dec(in, r.PV)
	wsp, _ := dec(in, r.WorkingSetpoint)
	power, _ := dec(in, r.OutputPower)
	alarms, _ := dec(in, r.Alarms)
	s.PVFloat, _ = dec(in, r.PVFloat)
	up, _ := dec(in, r.Uptime)
	st, _ := dec(in, r.Status)
	sp, _ := dec(hr, r.Setpoint)
	ramp, _ := dec(hr, r.RampRate)
	en, _ := dec(hr, r.HeaterEnable)
	wd, _ := dec(hr, r.WatchdogTimeout)
	lim, _ := dec(hr, r.AlarmLimit)
	if len(errs) > 0 {
		return Snapshot{}, fmt.Errorf("%s: %w", c.o.Name, errors.Join(errs...))
	}
	bits := uint16(alarms)
	if bits&1 != 0 {
		s.Alarms |= device.AlarmHighTemperature
	}
	if bits&2 != 0 {
		s.Alarms |= device.AlarmSensorBreak
	}
	if bits&4 != 0 {
		s.Alarms |= device.AlarmWatchdog
	}
	raw, _ := r.PV.Raw(pvWords)
	if (r.PV.Type == modbus.Int16 && raw == 0x7FFF) || math.IsNaN(s.PVFloat) || math.IsNaN(pv) {
		s.Alarms |= device.AlarmSensorBreak
	}
	s.ProcessValue = device.Celsius(pv)
	s.WorkingSetpoint = device.Celsius(wsp)
	s.OutputPower = device.Percent(power)
	s.Setpoint = device.Celsius(sp)
	s.RampRate = device.KelvinPerMinute(ramp)
	s.HeaterEnabled = en != 0
	s.At = time.Now()
	s.Uptime = time.Duration(up) * time.Second
	sb := uint16(st)
	s.HeaterActive, s.Ramping, s.RelayPermits = sb&1 != 0, sb&2 != 0, sb&4 != 0
	s.WatchdogTimeout = time.Duration(wd) * time.Millisecond
	s.AlarmLimit = device.Celsius(lim)
	if s.Alarms&device.AlarmSensorBreak != 0 {
		return s, fmt.Errorf("%s: thermocouple open (PV invalid): %w", c.o.Name, device.ErrSensor)
	}
	return s, nil
}

// Status reads a full snapshot; see Snapshot.
func (c *Controller) Status(ctx context.Context) (device.FurnaceStatus, error) {
	s, err := c.Snapshot(ctx)
	return s.FurnaceStatus, err
}

// writeConfirmed encodes v, writes it and reads it back.
func (c *Controller) writeConfirmed(ctx context.Context, what string, spec modbus.RegisterSpec, v float64) error {
	words, err := spec.Encode(v)
	if err != nil {
		return fmt.Errorf("%s: %s %v: %w", c.o.Name, what, v, err)
	}
	if len(words) == 1 {
		err = c.bus.WriteSingleRegister(ctx, c.o.Unit, spec.Address, words[0])
	} else {
		err = c.bus.WriteMultipleRegisters(ctx, c.o.Unit, spec.Address, words)
	}
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", c.o.Name, what, err)
	}
	back, err := c.bus.ReadHoldingRegisters(ctx, c.o.Unit, spec.Address, spec.Words())
	if err != nil {
		return fmt.Errorf("%s: read back %s: %w", c.o.Name, what, err)
	}
	for i := range words {
		if back[i] != words[i] {
			return fmt.Errorf("%s: %s wrote %04x, reads %04x: %w", c.o.Name, what, words, back, device.ErrReadback)
		}
	}
	return nil
}

func outOfRange(name, what string, v, lo, hi any) error {
	return fmt.Errorf("%s: %s %v outside %v..%v: %w", name, what, v, lo, hi, device.ErrOutOfRange)
}

// SetSetpoint writes the setpoint and confirms it by read-back.
func (c *Controller) SetSetpoint(ctx context.Context, t device.Temperature) error {
	if !device.Finite(float64(t)) || t < c.o.SetpointMin || t > c.o.SetpointMax {
		return outOfRange(c.o.Name, "setpoint", t, c.o.SetpointMin, c.o.SetpointMax)
	}
	return c.writeConfirmed(ctx, "setpoint", c.o.Registers.Setpoint, t.Celsius())
}

// SetRampRate writes the ramp rate (0 = step) and confirms it by read-back.
func (c *Controller) SetRampRate(ctx context.Context, r device.TemperatureRate) error {
	if !device.Finite(float64(r)) || r < 0 || r > c.o.RampMax {
		return outOfRange(c.o.Name, "ramp rate", r, device.KelvinPerMinute(0), c.o.RampMax)
	}
	return c.writeConfirmed(ctx, "ramp rate", c.o.Registers.RampRate, r.KelvinPerMinute())
}

// SetHeater writes heater enable and confirms it by read-back. Enabling also
// clears a latched watchdog alarm on this controller.
func (c *Controller) SetHeater(ctx context.Context, on bool) error {
	v := 0.0
	if on {
		v = 1
	}
	return c.writeConfirmed(ctx, "heater enable", c.o.Registers.HeaterEnable, v)
}

// SetAlarmLimit writes the controller's own high-temperature alarm limit.
func (c *Controller) SetAlarmLimit(ctx context.Context, t device.Temperature) error {
	if !device.Finite(float64(t)) || t < device.Celsius(0) || t > c.o.AlarmLimitMax {
		return outOfRange(c.o.Name, "alarm limit", t, device.Celsius(0), c.o.AlarmLimitMax)
	}
	return c.writeConfirmed(ctx, "alarm limit", c.o.Registers.AlarmLimit, t.Celsius())
}

// ConfigureWatchdog sets the comms watchdog timeout (0 disables it; otherwise
// within WatchdogMin..WatchdogMax, whole milliseconds) and confirms it.
func (c *Controller) ConfigureWatchdog(ctx context.Context, timeout time.Duration) error {
	if timeout != 0 && (timeout < c.o.WatchdogMin || timeout > c.o.WatchdogMax) {
		return outOfRange(c.o.Name, "watchdog timeout", timeout, c.o.WatchdogMin, c.o.WatchdogMax)
	}
	return c.writeConfirmed(ctx, "watchdog timeout", c.o.Registers.WatchdogTimeout, float64(timeout.Milliseconds()))
}

// KickWatchdog writes the kick register (a changing value; no read-back).
func (c *Controller) KickWatchdog(ctx context.Context) error {
	c.mu.Lock()
	c.kick++
	v := c.kick
	c.mu.Unlock()
	spec := c.o.Registers.WatchdogKick
	if err := c.bus.WriteSingleRegister(ctx, c.o.Unit, spec.Address, v); err != nil {
		return fmt.Errorf("%s: kick watchdog: %w", c.o.Name, err)
	}
	return nil
}

// Halt disables the heater output and confirms it by read-back; the setpoint
// is left as it is. It is idempotent.
func (c *Controller) Halt(ctx context.Context) error {
	if err := c.SetHeater(ctx, false); err != nil {
		return fmt.Errorf("%s: halt: %w", c.o.Name, err)
	}
	return nil
}

// StartWatchdog starts a goroutine that kicks the comms watchdog every period
// until ctx ends or Close is called. Kick failures are logged; the controller
// drops its output by itself if they persist. Only one kicker runs at a time.
func (c *Controller) StartWatchdog(ctx context.Context, period time.Duration) error {
	if period <= 0 {
		return fmt.Errorf("%s: watchdog kick period %v: %w", c.o.Name, period, device.ErrOutOfRange)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return fmt.Errorf("%s: watchdog kicker already running", c.o.Name)
	}
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			kctx, kcancel := context.WithTimeout(ctx, period)
			if err := c.KickWatchdog(kctx); err != nil && ctx.Err() == nil {
				c.o.Logger.Warn("watchdog kick failed", "instrument", c.o.Name, "err", err)
			}
			kcancel()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Close stops the watchdog kicker, if any, and waits for it. It does not
// close the bus, which the caller owns.
func (c *Controller) Close() error {
	c.mu.Lock()
	cancel := c.cancel
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
	return nil
}
