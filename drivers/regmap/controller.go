package regmap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/profile"
)

// ControllerOpts places a temperature controller on its bus.
type ControllerOpts struct {
	Name   string // for errors and logs; default "furnace"
	Unit   byte   // Modbus unit id
	Logger *slog.Logger
}

// Controller is a temperature controller driven through its profile.
type Controller struct {
	bus  Bus
	p    *profile.Profile
	o    ControllerOpts
	ch   map[profile.Role]profile.Channel
	init []profile.Channel // written once by Init
	full plan              // Snapshot's: every channel with a role
	// status is Status's: only the channels device.FurnaceStatus needs,
	// which the monitor polls at the furnace period.
	status plan
	bits   bitPositions
	// heaterOff is the raw value of heater_enable that means off.
	heaterOff int64
	kick      uint16

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
	return newController(bus, p, o)
}

// StatusReads returns the size in registers of each read of the monitor's
// poll (Status) of a controller of profile p, in order: what a line's speed
// makes of one poll (rigconfig refuses a furnace period shorter than the
// poll's time on a serial line).
func StatusReads(p *profile.Profile) ([]int, error) {
	if p == nil {
		return nil, errors.New("regmap: nil profile")
	}
	c, err := newController(nil, p, ControllerOpts{})
	if err != nil {
		return nil, err
	}
	n := make([]int, len(c.status.spans))
	for i, s := range c.status.spans {
		n[i] = int(s.n)
	}
	return n, nil
}

// newController is NewController without the check of the bus.
func newController(bus Bus, p *profile.Profile, o ControllerOpts) (*Controller, error) {
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
	var fullSpans, statusSpans []span
	for _, t := range []modbus.Table{modbus.Input, modbus.Holding} {
		fullSpans = append(fullSpans, spans(t, byTable[t], mapped, p.BatchGaps)...)
		var status []modbus.RegisterSpec
		for role, ch := range c.ch {
			if s := ch.Register(); statusRoles[role] && s.Table == t {
				status = append(status, s)
			}
		}
		statusSpans = append(statusSpans, spans(t, status, mapped, p.BatchGaps)...)
	}
	c.heaterOff = *c.ch[profile.RoleHeaterEnable].Off
	c.full = c.planOf(fullSpans, nil)
	c.status = c.planOf(statusSpans, statusRoles)
	c.bits = bitPositions{
		high: c.bitOf(profile.RoleAlarmBits, "high_temperature"), sensor: c.bitOf(profile.RoleAlarmBits, "sensor_break"),
		watchdog: c.bitOf(profile.RoleAlarmBits, "watchdog"), heaterFault: c.bitOf(profile.RoleAlarmBits, "heater_fault"),
		heaterActive: c.bitOf(profile.RoleStatusBits, "heater_active"), ramping: c.bitOf(profile.RoleStatusBits, "ramping"),
		relayPermits: c.bitOf(profile.RoleStatusBits, "relay_permits"),
	}
	return c, nil
}

// planOf is the decoding plan of the role channels in only (nil: every
// role but the kick) over spans, made once: each channel's span and start,
// so that a reading decodes straight from the words it read.
func (c *Controller) planOf(ss []span, only map[profile.Role]bool) plan {
	pl := plan{spans: ss}
	for i := range c.p.Channels {
		ch := &c.p.Channels[i]
		if ch.Role == "" || ch.Role == profile.RoleInit || ch.Role == profile.RoleWatchdogKick || (only != nil && !only[ch.Role]) {
			continue
		}
		spec := ch.Register()
		for k, sp := range ss {
			if sp.table == spec.Table && spec.Address >= sp.lo && int(spec.Address)+int(spec.Words()) <= int(sp.lo)+int(sp.n) {
				pl.decs = append(pl.decs, decoder{role: roleIndex(ch.Role), ch: ch, spec: spec, span: k, start: sp.lo})
				break
			}
		}
	}
	return pl
}

// bitOf is the bit of name in the channel of role, or -1.
func (c *Controller) bitOf(role profile.Role, name string) int {
	if b, ok := c.ch[role].Bits[name]; ok {
		return b
	}
	return -1
}

// plan is how a reading is read (spans) and decoded (one decoder per
// channel).
type plan struct {
	spans []span
	decs  []decoder
}

// decoder is one channel of a plan: its role, encoding and place in the
// words a span read.
type decoder struct {
	role  int // roleIndex
	ch    *profile.Channel
	spec  modbus.RegisterSpec
	span  int    // index in plan.spans
	start uint16 // the span's first address
}

// bitPositions are the alarm and status bits the profile names (-1: none).
type bitPositions struct {
	high, sensor, watchdog, heaterFault, heaterActive, ramping, relayPermits int
}

// roleNames index the decoded values of a reading (snapshot's constants
// follow this order).
var roleNames = [...]profile.Role{profile.RoleProcessValue, profile.RoleProcessValueFloat, profile.RoleSetpoint,
	profile.RoleWorkingSetpoint, profile.RoleRampRate, profile.RoleHeaterEnable, profile.RoleOutputPower,
	profile.RoleAlarmBits, profile.RoleStatusBits, profile.RoleWatchdogTimeout, profile.RoleAlarmLimit, profile.RoleUptime}

func roleIndex(r profile.Role) int {
	for i, x := range roleNames {
		if x == r {
			return i
		}
	}
	return -1
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
func (c *Controller) Reads() (snapshot, status int) { return len(c.full.spans), len(c.status.spans) }

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
	return c.snapshot(ctx, &c.full, true)
}

// snapshot reads pl's spans and decodes its channels (into Values too when
// values is set).
func (c *Controller) snapshot(ctx context.Context, pl *plan, values bool) (Snapshot, error) {
	words, err := readSpans(ctx, c.bus, c.o.Unit, c.o.Name, pl.spans)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{PVFloat: math.NaN()}
	if values {
		s.Values = make(map[string]float64, len(pl.decs))
	}
	const (
		pvI = iota
		pvFloatI
		setpointI
		workingI
		rampI
		heaterI
		powerI
		alarmsI
		statusI
		watchdogI
		alarmLimitI
		uptimeI
	)
	var (
		errs  []error
		raw   [len(roleNames)]int64
		val   [len(roleNames)]float64
		have  [len(roleNames)]bool
		pvDev float64 // the process value in the channel's own unit
	)
	for i := range pl.decs {
		d := &pl.decs[i]
		block := words[d.span]
		v, err := d.spec.DecodeFrom(block, d.start)
		if err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", d.ch.Name, err))
			continue
		}
		r, _ := d.spec.Raw(block[d.spec.Address-d.start:])
		// The device's range is in the channel's own unit; the reading is
		// kept in the canonical unit (celsius, °C/min, %), the one every
		// limit of the rig is compared in.
		raw[d.role], val[d.role], have[d.role] = r, d.ch.ToCanonical(v), true
		if d.role == pvI {
			pvDev = v
		}
		if values {
			s.Values[d.ch.Name] = v
		}
		if d.ch.Role != profile.RoleProcessValue && d.ch.Role != profile.RoleProcessValueFloat && !d.ch.InRange(v) { // the process value's own faults are a sensor break, below
			errs = append(errs, fmt.Errorf("channel %s reads %g %s, outside the instrument's range %v: %w", d.ch.Name, v, d.ch.Unit, d.ch.Range, device.ErrSensor))
		}
	}
	if len(errs) > 0 {
		return Snapshot{}, fmt.Errorf("%s: %w", c.o.Name, errors.Join(errs...))
	}
	bit := func(role int, b int) bool { return b >= 0 && have[role] && uint64(raw[role])&(1<<b) != 0 }
	if bit(alarmsI, c.bits.high) {
		s.Alarms |= device.AlarmHighTemperature
	}
	if bit(alarmsI, c.bits.sensor) {
		s.Alarms |= device.AlarmSensorBreak
	}
	if bit(alarmsI, c.bits.watchdog) {
		s.Alarms |= device.AlarmWatchdog
	}
	if bit(alarmsI, c.bits.heaterFault) {
		s.Alarms |= device.AlarmHeaterFault
	}
	pvCh := c.ch[profile.RoleProcessValue]
	pv := val[pvI]
	var fault string
	if pvCh.Invalid != nil && raw[pvI] == *pvCh.Invalid {
		fault = fmt.Sprintf("process value reads %d, the instrument's invalid value", *pvCh.Invalid)
	} else if !pvCh.InRange(pvDev) {
		fault = fmt.Sprintf("process value %g %s outside the instrument's range %v", pvDev, pvCh.Unit, pvCh.Range)
	}
	if have[pvFloatI] {
		s.PVFloat = val[pvFloatI]
		if math.IsNaN(s.PVFloat) && fault == "" {
			fault = "process value (float) is NaN"
		}
	}
	if fault != "" {
		s.Alarms |= device.AlarmSensorBreak
	}
	s.ProcessValue = device.Celsius(pv)
	s.WorkingSetpoint = device.Celsius(val[workingI])
	s.OutputPower = device.Percent(val[powerI])
	s.Setpoint = device.Celsius(val[setpointI])
	s.RampRate = device.KelvinPerMinute(val[rampI])
	s.HeaterEnabled = raw[heaterI] != c.heaterOff // anything but off may heat
	s.At = time.Now()
	s.Uptime = time.Duration(val[uptimeI] * float64(time.Second))
	s.HeaterActive = bit(statusI, c.bits.heaterActive)
	s.Ramping = bit(statusI, c.bits.ramping)
	s.RelayPermits = bit(statusI, c.bits.relayPermits)
	s.WatchdogTimeout = time.Duration(val[watchdogI]) * time.Millisecond
	s.AlarmLimit = device.Celsius(val[alarmLimitI])
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
	s, err := c.snapshot(ctx, &c.status, false)
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

// writeChannel writes ch; see write. v is in the canonical unit of the
// channel's dimension (celsius, °C/min, %): it is converted to the
// channel's own unit, checked against the device's range in that unit,
// then encoded (scaled) for the wire.
func (c *Controller) writeChannel(ctx context.Context, ch profile.Channel, v float64, confirm bool) error {
	canon := v
	v = ch.FromCanonical(v)
	if !device.Finite(v) || !ch.InRange(v) {
		if v != canon {
			return fmt.Errorf("%s: %s %v (%v %s) outside %v %s: %w", c.o.Name, ch.Name, canon, v, ch.Unit, ch.Range, ch.Unit, device.ErrOutOfRange)
		}
		return fmt.Errorf("%s: %s %v outside %v: %w", c.o.Name, ch.Name, v, ch.Range, device.ErrOutOfRange)
	}
	spec := ch.Register()
	words, err := spec.Encode(v)
	if err != nil {
		return fmt.Errorf("%s: %s %v: %w", c.o.Name, ch.Name, v, err)
	}
	if ch.NonVolatile && c.holds(ctx, spec, words) {
		return nil // already there: no write to non-volatile memory
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

// holds reports whether the unit's register already holds words. A read
// that fails says no: the write is then sent (toward safe is never held
// back by a failed read).
func (c *Controller) holds(ctx context.Context, spec modbus.RegisterSpec, words []uint16) bool {
	read := c.bus.ReadHoldingRegisters
	if spec.Table == modbus.Input {
		return false
	}
	got, err := read(ctx, c.o.Unit, spec.Address, spec.Words())
	if err != nil || len(got) < len(words) {
		return false
	}
	for i := range words {
		if got[i] != words[i] {
			return false
		}
	}
	return true
}

// InitWrite is one setting Init wrote because the unit differed from the
// profile's mode: what the agent changed on the unit, for the log and the
// audit.
type InitWrite struct {
	Channel     string  `json:"channel"`
	Value       float64 `json:"value"`
	NonVolatile bool    `json:"non_volatile"` // the channel lives in memory of limited write endurance
}

// Init turns the heater off, then sets each init channel of the profile
// to its value — the mode the other roles assume (automatic control, the
// comms setpoint selected) — writing only a channel that differs (logged
// either way; confirmed by read-back), and returns what it wrote. The
// daemon calls it once at start and audits every write.
func (c *Controller) Init(ctx context.Context) ([]InitWrite, error) {
	if err := c.Halt(ctx); err != nil {
		return nil, err
	}
	var wrote []InitWrite
	for _, ch := range c.init {
		spec := ch.Register()
		if words, err := spec.Encode(*ch.Value); err == nil && c.holds(ctx, spec, words) {
			c.o.Logger.Info("controller already in the profile's mode", "instrument", c.o.Name, "channel", ch.Name, "value", *ch.Value)
			continue
		}
		c.o.Logger.Info("the agent sets the controller's mode at start", "instrument", c.o.Name, "channel", ch.Name, "value", *ch.Value, "non_volatile", ch.NonVolatile)
		if err := c.writeChannel(ctx, ch, *ch.Value, true); err != nil {
			return wrote, fmt.Errorf("%s: init: %w", c.o.Name, err)
		}
		wrote = append(wrote, InitWrite{Channel: ch.Name, Value: *ch.Value, NonVolatile: ch.NonVolatile})
	}
	return wrote, nil
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
