package rigbuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"hcp-edge/device/rig"

	"go.bug.st/serial"
	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/raman"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/serialline"
	"hcp-edge/drivers/simgpio"
	"hcp-edge/drivers/tpg"
)

// Instruments are the rig's drivers, built from a rig.Config. Close closes
// every line. A field is nil when BuildPartial could not open its
// instrument.
type Instruments struct {
	// Zones are the heated zones' controllers, in the layout's order
	// (rig.Config.ZoneEntries), each nil when BuildPartial could not build
	// it; Furnace is the first zone's, the one the envelope drives.
	Zones   []*regmap.Controller
	Furnace *regmap.Controller
	// Modules are the I/O modules, in the layout's order
	// (rig.Config.ModuleEntries), each nil when BuildPartial could not
	// build it; DIO is the first.
	Modules []*regmap.Module
	DIO     *regmap.Module
	MFCs    []*alicat.MFC // in configuration order (BuildPartial: those that opened)
	// Gauges are the gauge controllers, in the layout's order
	// (rig.Config.GaugeEntries), each nil when BuildPartial could not open
	// it; Gauge is the one whose head reads the process pressure, and
	// reads that head.
	Gauges []*tpg.Gauge
	Gauge  *tpg.Gauge
	Raman  *raman.Spectrometer
	GPIO   *simgpio.Client // gpio.source sim; nil with source host

	host *hostGPIO // gpio.source host (hostgpio.go)

	// Set by StartInputs: the GPIO inputs, debounced and watched.
	EStop, Leak, RelayFB *gpio.Input
	// Set by Relay: the interlock relay output.
	RelayOut *gpio.Output
	// Set by StartHeartbeat: the watchdog relay's heartbeat (nil without
	// gpio.relay_watchdog).
	Heartbeat *gpio.Heartbeat

	// Unreachable names what BuildPartial could not open, and why.
	Unreachable map[string]error

	cfg     rig.Config
	closers []func() error
}

// Build constructs every driver of r, each described by its profile in ps;
// any failure fails it. It performs no write on the hardware. perr is the
// error of loading ps (LoadProfiles), added to a furnace that cannot be
// built.
func Build(r rig.Config, ps Profiles, perr error) (*Instruments, error) {
	in := BuildPartial(r, ps, perr)
	if len(in.Unreachable) > 0 {
		var errs []error
		for _, name := range sortedKeys(in.Unreachable) {
			errs = append(errs, in.Unreachable[name])
		}
		_ = in.Close()
		return nil, errors.Join(errs...)
	}
	return in, nil
}

// BuildPartial constructs every driver of r that it can and records the
// others in Unreachable (keyed by instrument name). It performs no write.
func BuildPartial(r rig.Config, ps Profiles, perr error) *Instruments {
	in := &Instruments{cfg: r, Unreachable: map[string]error{}}
	buses := map[string]*modbus.Bus{}
	for name, bc := range r.ModbusBuses {
		o := modbus.DefaultOpts()
		o.Name = "modbus " + name
		o.Transport, o.Address = bc.Transport, bc.Address
		if bc.Timeout > 0 {
			o.Timeout = bc.Timeout
		}
		if bc.Retries != nil {
			o.Retries = *bc.Retries
		}
		if bc.Mode != "" {
			m, err := serialline.ParseMode(bc.Mode)
			if err != nil {
				in.Unreachable["bus "+name] = fmt.Errorf("rigconfig: bus %s: %w", name, err)
				continue
			}
			o.Baud, o.DataBits, o.Parity, o.StopBits = m.BaudRate, m.DataBits, parity(m.Parity), stopBits(m.StopBits)
		}
		b, err := modbus.New(o)
		if err != nil {
			in.Unreachable["bus "+name] = fmt.Errorf("rigconfig: bus %s: %w", name, err)
			continue
		}
		buses[name] = b
		in.closers = append(in.closers, b.Close)
	}
	// One client per bus (above): the zones' controllers and the modules on
	// one line share it, one transaction at a time, halts first
	// (modbus.Bus's urgent lane).
	for i, z := range r.ZoneEntries() {
		c, err := buildController(buses, z, ps)
		if _, bus := buses[z.Bus]; err != nil && bus {
			err = errors.Join(err, perr) // the profile may be one that did not load
		}
		if err != nil {
			in.Unreachable[z.Controller] = fmt.Errorf("rigconfig: %s: %w", unreachableName(z.Key, z.Controller), err)
		} else {
			in.closers = append(in.closers, c.Close)
		}
		in.Zones = append(in.Zones, c)
		if i == 0 {
			in.Furnace = c
		}
	}
	for i, me := range r.ModuleEntries() {
		m, err := buildModule(buses, r, me, ps)
		if err != nil {
			in.Unreachable[me.Name] = fmt.Errorf("rigconfig: %s: %w", unreachableName(me.Key, me.Name), err)
		}
		in.Modules = append(in.Modules, m)
		if i == 0 {
			in.DIO = m
		}
	}
	for _, mc := range r.MFCs {
		m, err := openMFC(mc, ps)
		if err != nil {
			in.Unreachable[mc.Name] = fmt.Errorf("rigconfig: %s: %w", mc.Name, err)
			continue
		}
		in.MFCs = append(in.MFCs, m)
		in.closers = append(in.closers, m.Close)
	}
	for _, ge := range r.GaugeEntries() {
		g, err := openGauge(ge, ps)
		if err != nil {
			in.Unreachable[ge.Name] = fmt.Errorf("rigconfig: %s: %w", unreachableName(ge.Key, ge.Name), err)
		} else {
			in.closers = append(in.closers, g.Close)
			if processHead(ge) != nil {
				in.Gauge = g
			}
		}
		in.Gauges = append(in.Gauges, g)
	}
	if sp, err := openRaman(r.Raman); err != nil {
		in.Unreachable[r.RamanName()] = fmt.Errorf("rigconfig: raman: %w", err)
	} else {
		in.Raman = sp
		in.closers = append(in.closers, sp.Close)
	}
	if r.GPIO.Source == "host" {
		if h, err := openHostGPIO(r.GPIO); err != nil {
			in.Unreachable["gpio"] = err
		} else {
			in.host = h
		}
		return in
	}
	so := simgpio.DefaultOpts()
	so.Socket = r.GPIO.Socket
	so.MaxPoll = time.Second
	if c, err := simgpio.New(so); err != nil {
		in.Unreachable["gpio"] = fmt.Errorf("rigconfig: gpio: %w", err)
	} else {
		in.GPIO = c
		in.closers = append(in.closers, c.Close)
	}
	return in
}

// Module returns the I/O module of a name (rig.Config.ModuleEntries), or
// nil when there is none or BuildPartial could not build it.
func (in *Instruments) Module(name string) *regmap.Module {
	for i, m := range in.cfg.ModuleEntries() {
		if m.Name == name && i < len(in.Modules) {
			return in.Modules[i]
		}
	}
	return nil
}

// Config returns the rig section the instruments were built from.
func (in *Instruments) Config() rig.Config { return in.cfg }

// GPIOOK reports whether the GPIO lines are available, from either source.
func (in *Instruments) GPIOOK() bool { return in.GPIO != nil || in.host != nil }

// HostGPIO reports whether the GPIO lines are the host's (gpio.source host).
func (in *Instruments) HostGPIO() bool { return in.host != nil }

// GPIOPin returns the pin of line (simgpio.EStop, Leak, Relay, RelayFB)
// from the configured source.
func (in *Instruments) GPIOPin(line string) (pgpio.PinIO, error) {
	switch {
	case in.GPIO != nil:
		return in.GPIO.Pin(line), nil
	case in.host != nil:
		return in.host.pin(line)
	}
	return nil, fmt.Errorf("rigconfig: gpio unavailable: %w", in.Unreachable["gpio"])
}

func openMFC(mc rig.MFC, ps Profiles) (*alicat.MFC, error) {
	o := alicat.DefaultOpts()
	o.Name, o.Gas, o.UnitID = mc.Name, mc.Gas, mc.UnitID[0]
	var err error
	if o.Profile, err = ps.Serial(mc.Profile, profile.FlowController, profile.Alicat); err != nil {
		return nil, err
	}
	if o.FullScale, err = rig.ParseFlow(mc.FullScale); err != nil {
		return nil, err
	}
	if err := serialOpts(&o.Line, o.Profile.Mode, mc.Serial, &o.Timeout); err != nil {
		return nil, err
	}
	return alicat.Open(mc.Port, o)
}

// buildController builds a zone's controller on its bus's shared client.
// A profile that could not be read is an error of perr too (Build's).
func buildController(buses map[string]*modbus.Bus, z rig.ZoneEntry, ps Profiles) (*regmap.Controller, error) {
	b, ok := buses[z.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %s unavailable", z.Bus)
	}
	p, err := ps.Lookup(z.Profile, profile.TemperatureController)
	if err != nil {
		return nil, err
	}
	return regmap.NewController(b, p, regmap.ControllerOpts{Name: z.Controller, Unit: z.Unit})
}

// buildModule builds an I/O module, with its outputs and inputs, on its
// bus's shared client.
func buildModule(buses map[string]*modbus.Bus, r rig.Config, m rig.ModuleEntry, ps Profiles) (*regmap.Module, error) {
	b, ok := buses[m.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %s unavailable", m.Bus)
	}
	p, err := ps.Lookup(m.Profile, profile.IOModule)
	if err != nil {
		return nil, err
	}
	return regmap.NewModule(b, p, ModuleOpts(r, m.Name))
}

// unreachableName is what an Unreachable error names: the one-entry
// shape's key (furnace, dio, gauge), as before the list shape, else the
// instrument.
func unreachableName(key, name string) string {
	if strings.ContainsAny(key, "[.") {
		return name
	}
	return key
}

// processHead returns the gauge's head that reads the process pressure, or nil.
func processHead(g rig.GaugeEntry) *rig.HeadEntry {
	for i, h := range g.Heads {
		if h.Role == rig.HeadProcess {
			return &g.Heads[i]
		}
	}
	return nil
}

// openGauge opens a gauge controller; its driver reads the process head's
// channel (else its first head's).
func openGauge(g rig.GaugeEntry, ps Profiles) (*tpg.Gauge, error) {
	o := tpg.DefaultOpts()
	o.Name = g.Name
	if h := processHead(g); h != nil {
		o.Channel = h.Channel
	} else if len(g.Heads) > 0 {
		o.Channel = g.Heads[0].Channel
	}
	var err error
	if o.Profile, err = ps.Serial(g.Profile, profile.PressureGauge, profile.TPG); err != nil {
		return nil, err
	}
	if err := serialOpts(&o.Line, o.Profile.Mode, g.Serial, &o.Timeout); err != nil {
		return nil, err
	}
	return tpg.Open(g.Serial.Port, o)
}

func openRaman(r rig.Raman) (*raman.Spectrometer, error) {
	o := raman.DefaultOpts()
	o.Name = rig.Config{Raman: r}.RamanName()
	if r.TimeScale > 0 {
		o.TimeScale = r.TimeScale
	}
	if err := serialOpts(&o.Line, "", r.Serial, &o.Timeout); err != nil {
		return nil, err
	}
	return raman.Open(r.Port, o)
}

// StartInputs builds the e-stop and leak inputs (active low) and the relay
// read-back input on the GPIO lines (the simulator's or the host's), and
// starts their watchers. Close stops them.
func (in *Instruments) StartInputs(ctx context.Context) error {
	if !in.GPIOOK() {
		return fmt.Errorf("rigconfig: gpio unavailable: %w", in.Unreachable["gpio"])
	}
	mk := func(line, name string, activeLow bool) (*gpio.Input, error) {
		o := gpio.DefaultInputOpts(name)
		o.ActiveLow = activeLow
		o.Wait = 200 * time.Millisecond
		o.ReadTimeout = time.Second
		pin, err := in.GPIOPin(line)
		if err != nil {
			return nil, err
		}
		i, err := gpio.NewInput(pin, o)
		if err != nil {
			return nil, fmt.Errorf("rigconfig: %s: %w", name, err)
		}
		if err := i.Start(ctx); err != nil {
			_ = i.Close()
			return nil, fmt.Errorf("rigconfig: %s: %w", name, err)
		}
		in.closers = append(in.closers, i.Close)
		return i, nil
	}
	var err error
	if in.EStop, err = mk(simgpio.EStop, rig.InputEStop, true); err != nil {
		return err
	}
	if in.Leak, err = mk(simgpio.Leak, rig.InputLeak, true); err != nil {
		return err
	}
	in.RelayFB, err = mk(simgpio.RelayFB, rig.InputRelayFB, false)
	return err
}

// Relay builds the interlock relay output with read-back through relay_fb.
// Building it DRIVES THE RELAY TO ITS SAFE LEVEL (de-energised): only the
// daemon and the e-stop fallback call it.
func (in *Instruments) Relay() (*gpio.Output, error) {
	if in.RelayOut != nil {
		return in.RelayOut, nil
	}
	if !in.GPIOOK() {
		return nil, fmt.Errorf("rigconfig: relay: gpio unavailable: %w", in.Unreachable["gpio"])
	}
	pin, err := in.GPIOPin(simgpio.Relay)
	if err != nil {
		return nil, fmt.Errorf("rigconfig: relay: %w", err)
	}
	fb, err := in.GPIOPin(simgpio.RelayFB)
	if err != nil {
		return nil, fmt.Errorf("rigconfig: relay: %w", err)
	}
	o := gpio.DefaultOutputOpts(rig.SwitchRelay)
	o.IOTimeout = time.Second
	out, err := gpio.NewOutput(pin, fb, o)
	if err != nil {
		return nil, fmt.Errorf("rigconfig: relay: %w", err)
	}
	in.RelayOut = out
	return out, nil
}

// StartHeartbeat starts toggling the watchdog relay's heartbeat line at a
// quarter of gpio.relay_watchdog, before the interlock relay may be
// energised: the relay stays powered only while the heartbeat runs, so a
// dead agent drops it (and with it heater power and the gas valves) within
// relay_watchdog. It does nothing without a relay watchdog. Close stops it.
func (in *Instruments) StartHeartbeat(ctx context.Context, log *slog.Logger) error {
	hold := in.cfg.GPIO.RelayWatchdog
	if hold <= 0 || in.Heartbeat != nil {
		return nil
	}
	pin, err := in.GPIOPin(simgpio.Heartbeat)
	if err != nil {
		return fmt.Errorf("rigconfig: heartbeat: %w", err)
	}
	o := gpio.DefaultHeartbeatOpts("heartbeat")
	o.Logger = log
	hb, err := gpio.NewHeartbeat(pin, o)
	if err != nil {
		return fmt.Errorf("rigconfig: heartbeat: %w", err)
	}
	if err := hb.Start(ctx, hold/4); err != nil {
		return fmt.Errorf("rigconfig: heartbeat: %w", err)
	}
	in.Heartbeat = hb
	in.closers = append(in.closers, hb.Close)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// serialOpts sets the line's mode (the configuration's, else the profile's
// mode, else the driver's default) and the exchange timeout.
func serialOpts(lo *serialline.Opts, mode string, s rig.Serial, timeout *time.Duration) error {
	if s.Mode != "" {
		mode = s.Mode
	}
	if mode != "" {
		m, err := serialline.ParseMode(mode)
		if err != nil {
			return err
		}
		lo.Mode = m
	}
	if s.Timeout > 0 {
		*timeout = s.Timeout
	}
	return nil
}

// Close closes every line and bus, in reverse order of opening.
func (in *Instruments) Close() error {
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		errs = append(errs, in.closers[i]())
	}
	in.closers = nil
	return errors.Join(errs...)
}

func parity(p serial.Parity) string {
	switch p {
	case serial.EvenParity:
		return "E"
	case serial.OddParity:
		return "O"
	}
	return "N"
}

func stopBits(s serial.StopBits) int {
	if s == serial.TwoStopBits {
		return 2
	}
	return 1
}

// GPIOLevel reads the level of line (simgpio.EStop, Leak, Relay, RelayFB)
// from the configured source, without configuring the pin: for probe.
func (in *Instruments) GPIOLevel(ctx context.Context, line string) (pgpio.Level, error) {
	if in.GPIO != nil {
		return in.GPIO.Level(ctx, line)
	}
	p, err := in.GPIOPin(line)
	if err != nil {
		return pgpio.Low, err
	}
	return p.Read(), nil
}
