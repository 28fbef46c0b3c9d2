package regmap

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
	"github.com/hcp-edge/hcp-edge/drivers/profile"
)

// ControllerOpts places a temperature controller on its bus.
type ControllerOpts struct {
	Name   string // for errors and logs; default "furnace"
	Unit   byte   // Modbus unit id
	Logger *slog.Logger
}

// Controller is a temperature controller driven through its profile.
type Controller struct {
	bus   Bus
	p     *profile.Profile
	o     ControllerOpts
	ch    map[profile.Role]profile.Channel
	init  []profile.Channel // written once by Init
	reads []span            // Snapshot's: every channel with a role
	// statusReads are Status's: only the channels device.FurnaceStatus
	// needs, which the monitor polls at the furnace period.
	statusReads []span
	kick        uint16

	mu     sync.Mutex // guards kick, cancel
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ device.TemperatureController = (*Controller)(nil)

// NewController returns the controller of profile p on bus. It sends
// nothing. p must be a Modbus temperature_controller profile (Parse has
// checked its roles).
func NewController(bus Bus, p *profile.Profile, o ControllerOpts) (*Controller, error) {
	if bus == nil || p == nil {
		return nil, errors.New("regmap: nil bus or profile")
	}
	if o.Name == "" {
		o.Name = "furnace"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if p.Family != profile.Modbus || p.Kind != profile.TemperatureController {
		return nil, fmt.Errorf("%s: profile %s is a %s %s, not a Modbus temperature_controller", o.Name, p.ID, p.Family, p.Kind)
	}
	c := &Controller{bus: bus, p: p, o: o, ch: map[profile.Role]profile.Channel{}}
	byTable := map[modbus.Table][]modbus.RegisterSpec{}
	var mapped []modbus.RegisterSpec // every channel: a read may bridge them
	for _, ch := range p.Channels {
		mapped = append(mapped, ch.Register())
		if ch.Role == "" {
			continue
		}
		if ch.Role == profile.RoleInit {
			c.init = append(c.init, ch)
			continue
		}
		c.ch[ch.Role] = ch
		s := ch.Register()
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: channel %s: %w", o.Name, ch.Name, err)
		}
		byTable[s.Table] = append(byTable[s.Table], s)
	}
	for _, r := range []profile.Role{profile.RoleProcessValue, profile.RoleSetpoint, profile.RoleHeaterEnable} {
		if _, ok := c.ch[r]; !ok {
			return nil, fmt.Errorf("%s: profile %s has no %s channel", o.Name, p.ID, r)
		}
	}
	for _, t := range []modbus.Table{modbus.Input, modbus.Holding} {
		c.reads = append(c.reads, spans(t, byTable[t], mapped, p.BatchGaps)...)
		var status []modbus.RegisterSpec
		for role, ch := range c.ch {
			if s := ch.Register(); statusRoles[role] && s.Table == t {
				status = append(status, s)
			}
		}
		c.statusReads = append(c.statusReads, spans(t, status, mapped, p.BatchGaps)...)
	}
	return c, nil
}

// statusRoles are the channels device.FurnaceStatus is made of.
var statusRoles = map[profile.Role]bool{
	profile.RoleProcessValue: true, profile.RoleProcessValueFloat: true, profile.RoleSetpoint: true,
	profile.RoleWorkingSetpoint: true, profile.RoleRampRate: true, profile.RoleHeaterEnable: true,
	profile.RoleOutputPower: true, profile.RoleAlarmBits: true,
}

// String names the controller.
func (c *Controller) String() string { return c.o.Name }

// Profile is the controller's profile.
func (c *Controller) Profile() *profile.Profile { return c.p }

// HasWatchdog reports whether the controller has a comms watchdog to kick.
func (c *Controller) HasWatchdog() bool {
	_, ok := c.ch[profile.RoleWatchdogKick]
	return ok
}

// Reads is how many Modbus transactions one Snapshot takes, and one Status
// (the monitor's poll).
func (c *Controller) Reads() (snapshot, status int) { return len(c.reads), len(c.statusReads) }

// Snapshot is everything the controller reports, beyond device.FurnaceStatus.
// A field whose role the profile lacks stays zero.
type Snapshot struct {
	device.FurnaceStatus
	PVFloat         float64 // PV as a float register reports it (NaN on sensor break; 0 without one)
	Uptime          time.Duration
	HeaterActive    bool // status bit heater_active
	Ramping         bool // status bit ramping
	RelayPermits    bool // status bit relay_permits
	WatchdogTimeout time.Duration
	AlarmLimit      device.Temperature
	// Values are every read channel's engineering value, by channel name.
	Values map[string]float64
}

// Snapshot reads every channel with a role, batched (Reads transactions),
// and decodes them. On a sensor break (an alarm bit, the profile's invalid
// raw value, a NaN float, or a process value outside its declared range) it
// returns the snapshot together with an error wrapping device.ErrSensor.
func (c *Controller) Snapshot(ctx context.Context) (Snapshot, error) {
	return c.snapshot(ctx, c.reads, nil)
}

// snapshot reads plan and decodes the channels of the roles in only (nil:
// every role).
func (c *Controller) snapshot(ctx context.Context, plan []span, only map[profile.Role]bool) (Snapshot, error) {
	got, err := readWords(ctx, c.bus, c.o.Unit, c.o.Name, plan)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{Values: map[string]float64{}, PVFloat: math.NaN()}
	var errs []error
	raw := map[profile.Role]int64{}
	val := map[profile.Role]float64{}
	for role, ch := range c.ch {
		if role == profile.RoleWatchdogKick || (only != nil && !only[role]) {
			continue
		}
		spec := ch.Register()
		w := wordsOf(got, spec)
		v, err := spec.Decode(w)
		if err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", ch.Name, err))
			continue
		}
		r, _ := spec.Raw(w)
		raw[role], val[role] = r, v
		s.Values[ch.Name] = v
		if role != profile.RoleProcessValue && role != profile.RoleProcessValueFloat && !ch.InRange(v) { // the process value's own faults are a sensor break, below
			errs = append(errs, fmt.Errorf("channel %s reads %g, outside the instrument's range %v: %w", ch.Name, v, ch.Range, device.ErrSensor))
		}
	}
	if len(errs) > 0 {
		return Snapshot{}, fmt.Errorf("%s: %w", c.o.Name, errors.Join(errs...))
	}
	bit := func(role profile.Role, name string) bool {
		ch, ok := c.ch[role]
		if !ok {
			return false
		}
		b, ok := ch.Bits[name]
		return ok && uint64(raw[role])&(1<<b) != 0
	}
	if bit(profile.RoleAlarmBits, "high_temperature") {
		s.Alarms |= device.AlarmHighTemperature
	}
	if bit(profile.RoleAlarmBits, "sensor_break") {
		s.Alarms |= device.AlarmSensorBreak
	}
	if bit(profile.RoleAlarmBits, "watchdog") {
		s.Alarms |= device.AlarmWatchdog
	}
	if bit(profile.RoleAlarmBits, "heater_fault") {
		s.Alarms |= device.AlarmHeaterFault
	}
	pvCh := c.ch[profile.RoleProcessValue]
	pv := val[profile.RoleProcessValue]
	var fault string
	if pvCh.Invalid != nil && raw[profile.RoleProcessValue] == *pvCh.Invalid {
		fault = fmt.Sprintf("process value reads %d, the instrument's invalid value", *pvCh.Invalid)
	} else if !pvCh.InRange(pv) {
		fault = fmt.Sprintf("process value %g outside the instrument's range %v", pv, pvCh.Range)
	}
	if _, ok := c.ch[profile.RoleProcessValueFloat]; ok {
		s.PVFloat = val[profile.RoleProcessValueFloat]
		if math.IsNaN(s.PVFloat) && fault == "" {
			fault = "process value (float) is NaN"
		}
	}
	if fault != "" {
		s.Alarms |= device.AlarmSensorBreak
	}
	s.ProcessValue = device.Celsius(pv)
	s.WorkingSetpoint = device.Celsius(val[profile.RoleWorkingSetpoint])
	s.OutputPower = device.Percent(val[profile.RoleOutputPower])
	s.Setpoint = device.Celsius(val[profile.RoleSetpoint])
	s.RampRate = device.KelvinPerMinute(val[profile.RoleRampRate])
	en := c.ch[profile.RoleHeaterEnable]
	s.HeaterEnabled = raw[profile.RoleHeaterEnable] != *en.Off // anything but off may heat
	s.At = time.Now()
	s.Uptime = time.Duration(val[profile.RoleUptime] * float64(time.Second))
	s.HeaterActive = bit(profile.RoleStatusBits, "heater_active")
	s.Ramping = bit(profile.RoleStatusBits, "ramping")
	s.RelayPermits = bit(profile.RoleStatusBits, "relay_permits")
	s.WatchdogTimeout = time.Duration(val[profile.RoleWatchdogTimeout]) * time.Millisecond
	s.AlarmLimit = device.Celsius(val[profile.RoleAlarmLimit])
	if s.Alarms&device.AlarmSensorBreak != 0 {
		if fault == "" {
			fault = "the controller reports a sensor break"
		}
		return s, fmt.Errorf("%s: %s (PV invalid): %w", c.o.Name, fault, device.ErrSensor)
	}
	return s, nil
}

// Status reads the channels of device.FurnaceStatus only (Reads' status
// count of transactions) and decodes them as Snapshot does.
func (c *Controller) Status(ctx context.Context) (device.FurnaceStatus, error) {
	s, err := c.snapshot(ctx, c.statusReads, statusRoles)
	return s.FurnaceStatus, err
}

// write encodes the engineering value v of a role's channel (refused
// outside its declared range, nothing sent), writes it and, unless the
// channel is a kick, reads it back.
func (c *Controller) write(ctx context.Context, role profile.Role, v float64, confirm bool) error {
	ch, ok := c.ch[role]
	if !ok {
		return fmt.Errorf("%s: profile %s has no %s channel: %w", c.o.Name, c.p.ID, role, errors.ErrUnsupported)
	}
	return c.writeChannel(ctx, ch, v, confirm)
}

// writeChannel writes ch; see write.
func (c *Controller) writeChannel(ctx context.Context, ch profile.Channel, v float64, confirm bool) error {
	if !device.Finite(v) || !ch.InRange(v) {
		return fmt.Errorf("%s: %s %v outside %v: %w", c.o.Name, ch.Name, v, ch.Range, device.ErrOutOfRange)
	}
	spec := ch.Register()
	words, err := spec.Encode(v)
	if err != nil {
		return fmt.Errorf("%s: %s %v: %w", c.o.Name, ch.Name, v, err)
	}
	if len(words) == 1 {
		err = c.bus.WriteSingleRegister(ctx, c.o.Unit, spec.Address, words[0])
	} else {
		err = c.bus.WriteMultipleRegisters(ctx, c.o.Unit, spec.Address, words)
	}
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", c.o.Name, ch.Name, err)
	}
	if !confirm {
		return nil
	}
	back, err := c.bus.ReadHoldingRegisters(ctx, c.o.Unit, spec.Address, spec.Words())
	if err != nil {
		return fmt.Errorf("%s: read back %s: %w", c.o.Name, ch.Name, err)
	}
	for i := range words {
		if i >= len(back) || back[i] != words[i] {
			return fmt.Errorf("%s: %s wrote %04x, reads %04x: %w", c.o.Name, ch.Name, words, back, device.ErrReadback)
		}
	}
	return nil
}

// Init turns the heater off, then writes each init channel of the profile
// to its value, each confirmed by read-back: the mode the other roles
// assume (automatic control, the comms setpoint selected). The daemon calls
// it once at start.
func (c *Controller) Init(ctx context.Context) error {
	if err := c.Halt(ctx); err != nil {
		return err
	}
	for _, ch := range c.init {
		if err := c.writeChannel(ctx, ch, *ch.Value, true); err != nil {
			return fmt.Errorf("%s: init: %w", c.o.Name, err)
		}
	}
	return nil
}

// SetSetpoint writes the setpoint channel and confirms it by read-back.
func (c *Controller) SetSetpoint(ctx context.Context, t device.Temperature) error {
	return c.write(ctx, profile.RoleSetpoint, t.Celsius(), true)
}

// SetRampRate writes the ramp rate (0 = step) and confirms it by read-back.
func (c *Controller) SetRampRate(ctx context.Context, r device.TemperatureRate) error {
	return c.write(ctx, profile.RoleRampRate, r.KelvinPerMinute(), true)
}

// SetHeater writes the heater_enable channel's on or off raw value and
// confirms it by read-back.
func (c *Controller) SetHeater(ctx context.Context, on bool) error {
	en := c.ch[profile.RoleHeaterEnable]
	raw := *en.Off
	if on {
		raw = *en.On
	}
	spec := en.Register()
	return c.write(ctx, profile.RoleHeaterEnable, float64(raw)*spec.Scale+spec.Offset, true)
}

// SetAlarmLimit writes the controller's own high-temperature alarm limit.
func (c *Controller) SetAlarmLimit(ctx context.Context, t device.Temperature) error {
	return c.write(ctx, profile.RoleAlarmLimit, t.Celsius(), true)
}

// ConfigureWatchdog sets the comms watchdog timeout (whole milliseconds)
// and confirms it; errors.ErrUnsupported when the model has none.
func (c *Controller) ConfigureWatchdog(ctx context.Context, timeout time.Duration) error {
	if _, ok := c.ch[profile.RoleWatchdogTimeout]; !ok {
		return fmt.Errorf("%s: profile %s declares no comms watchdog timeout: %w", c.o.Name, c.p.ID, errors.ErrUnsupported)
	}
	return c.write(ctx, profile.RoleWatchdogTimeout, float64(timeout.Milliseconds()), true)
}

// KickWatchdog writes the kick channel (a changing value; no read-back). A
// model without a comms watchdog has nothing to kick: it returns nil.
func (c *Controller) KickWatchdog(ctx context.Context) error {
	ch, ok := c.ch[profile.RoleWatchdogKick]
	if !ok {
		return nil
	}
	c.mu.Lock()
	c.kick++
	v := c.kick
	c.mu.Unlock()
	if err := c.bus.WriteSingleRegister(ctx, c.o.Unit, ch.Register().Address, v); err != nil {
		return fmt.Errorf("%s: kick watchdog: %w", c.o.Name, err)
	}
	return nil
}

// Halt turns the heater off and confirms it by read-back; the setpoint is
// left as it is. It is idempotent.
func (c *Controller) Halt(ctx context.Context) error {
	if err := c.SetHeater(ctx, false); err != nil {
		return fmt.Errorf("%s: halt: %w", c.o.Name, err)
	}
	return nil
}

// StartWatchdog starts a goroutine that kicks the comms watchdog every period
// until ctx ends or Close is called. Only one kicker runs at a time.
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
