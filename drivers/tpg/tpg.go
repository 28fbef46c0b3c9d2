package tpg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/profile"
	"github.com/hcp-edge/hcp-edge/drivers/serialline"
)

// Control characters of the mnemonic protocol.
const (
	ack = 0x06
	nak = 0x15
	enq = 0x05
)

// Unit is a unit code of the unit command ('0' .. '9', as the gauge
// sends it): the profile's units say which pressure unit each is.
type Unit byte

// Model is a gauge controller model of the family, compiled from its
// profile (drivers/profile, family tpg): its gauges' mnemonics and
// measuring ranges, its unit codes and command, and its status codes.
type Model struct {
	p      *profile.Profile
	units  map[Unit]device.Pressure
	pascal Unit // the code of pa (0: none)
}

// NewModel compiles a profile of the tpg family (one Parse accepted).
func NewModel(p *profile.Profile) (*Model, error) {
	if p == nil || p.Family != profile.TPG || len(p.Channels) == 0 || p.Commands["unit"] == "" {
		return nil, errors.New("tpg: needs a profile of the tpg family with a gauge and a unit command")
	}
	m := &Model{p: p, units: map[Unit]device.Pressure{}}
	for code, name := range p.Units {
		u, ok := profile.PressureUnit(name)
		if !ok || len(code) != 1 {
			return nil, fmt.Errorf("tpg: profile %s: unit code %q: %q", p.ID, code, name)
		}
		m.units[Unit(code[0])] = u
		if u == device.Pascal {
			m.pascal = Unit(code[0])
		}
	}
	return m, nil
}

// Profile is the profile the model was compiled from.
func (m *Model) Profile() *profile.Profile { return m.p }

// Opts configures a gauge.
type Opts struct {
	// Name names the instrument in logs and errors, e.g. "gauge".
	Name string
	// SetUnit makes the driver set the unit to pascal (UNI,2, the profile's
	// unit command and pa's code) before the first reading; when false, or
	// when the model has no pa, it reads the unit and converts from it.
	SetUnit bool
	// Timeout bounds one command exchange (mnemonic, ACK, ENQ, data) when the
	// caller's context allows more (or has no deadline).
	Timeout time.Duration
	// Line configures the serial line opened by Open (unused by New).
	Line serialline.Opts
	// Profile is the controller model's (family tpg). New refuses none.
	Profile *profile.Profile
	// Channel is the profile's gauge channel that ReadPressure reads
	// ("": the first).
	Channel string
}

// DefaultOpts returns "gauge", SetUnit, 500 ms per exchange, 9600 8N1; the
// profile has no default.
func DefaultOpts() Opts {
	return Opts{Name: "gauge", SetUnit: true, Timeout: 500 * time.Millisecond, Line: serialline.DefaultOpts()}
}

// Gauge is one gauge of a Pfeiffer TPG-style controller.
type Gauge struct {
	line    *serialline.Line
	ownLine bool
	opts    Opts
	model   *Model
	ch      profile.Channel
	rng     [2]device.Pressure // the channel's measuring range
	now     func() time.Time

	mu        sync.Mutex
	unit      Unit
	unitKnown bool
}

var _ device.PressureGauge = (*Gauge)(nil)

// New returns the gauge on line, which it does not close. It does no I/O: the
// unit is established by the first ReadPressure.
func New(line *serialline.Line, opts Opts) (*Gauge, error) {
	if line == nil {
		return nil, errors.New("tpg: nil line")
	}
	if opts.Name == "" {
		opts.Name = "gauge"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOpts().Timeout
	}
	m, err := NewModel(opts.Profile)
	if err != nil {
		return nil, err
	}
	g := &Gauge{line: line, opts: opts, model: m, ch: opts.Profile.Channels[0], now: time.Now}
	if opts.Channel != "" {
		var ok bool
		if g.ch, ok = opts.Profile.Channel(opts.Channel); !ok {
			return nil, fmt.Errorf("tpg %s: profile %s has no gauge %q", opts.Name, opts.Profile.ID, opts.Channel)
		}
	}
	u, ok := profile.PressureUnit(g.ch.Unit)
	if !ok || len(g.ch.Range) != 2 || g.ch.Command == "" {
		return nil, fmt.Errorf("tpg %s: gauge %s: needs a mnemonic, a pressure unit and a range", opts.Name, g.ch.Name)
	}
	g.rng = [2]device.Pressure{device.Pressure(g.ch.Range[0]) * u, device.Pressure(g.ch.Range[1]) * u}
	return g, nil
}

// Open opens the serial port at path with opts.Line and returns the gauge on
// it; Close closes the port.
func Open(path string, opts Opts) (*Gauge, error) {
	g, err := serialline.OpenFor(path, opts.Line, opts.Name, func(line *serialline.Line) (*Gauge, error) {
		g, err := New(line, opts)
		if err == nil {
			g.ownLine = true
		}
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("tpg %s: %w", opts.Name, err)
	}
	return g, nil
}

// Close closes the serial line if Open opened it.
func (g *Gauge) Close() error {
	if g.ownLine {
		return g.line.Close()
	}
	return nil
}

// String names the instrument.
func (g *Gauge) String() string { return g.opts.Name }

// Halt does nothing to the chamber (a gauge has no outputs) and returns nil.
func (g *Gauge) Halt(ctx context.Context) error { return nil }

// Model is the controller's model, compiled from its profile.
func (g *Gauge) Model() *Model { return g.model }

// ReadPressure reads the gauge (its channel's mnemonic, PR1). Statuses
// meaning ok, underrange and overrange come with a nil error; the others
// (sensor error, off, no sensor, identification error), and a value outside
// the channel's measuring range, come with an error wrapping
// device.ErrSensor. Before the first reading, and after any failed exchange
// (the controller may have been power-cycled back to mbar), it establishes
// the unit (UNI,2 or UNI, per Opts.SetUnit).
func (g *Gauge) ReadPressure(ctx context.Context) (device.PressureReading, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.unitKnown {
		if err := g.establishUnit(ctx); err != nil {
			return device.PressureReading{}, err
		}
	}
	sent := g.now()
	data, err := g.query(ctx, g.ch.Command)
	if err != nil {
		g.unitKnown = false
		return device.PressureReading{}, fmt.Errorf("%s: read pressure: %w", g.opts.Name, err)
	}
	r, err := g.model.ParsePressure(data, g.unit)
	if err == nil && !g.inRange(r.Pressure) {
		r.Status = device.GaugeSensorError
		err = fmt.Errorf("%v outside gauge %s's measuring range %g..%g %s: %w", r.Pressure, g.ch.Name, g.ch.Range[0], g.ch.Range[1], g.ch.Unit, device.ErrSensor)
	}
	r.At, r.Sent = g.now(), sent
	if err != nil {
		if !errors.Is(err, device.ErrSensor) {
			g.unitKnown = false
		}
		return r, fmt.Errorf("%s: read pressure: %w", g.opts.Name, err)
	}
	return r, nil
}

// inRange reports whether p lies in the gauge's measuring range, within
// the 5 significant digits the gauge prints (a limit converted between
// units is not exact).
func (g *Gauge) inRange(p device.Pressure) bool {
	return p >= g.rng[0]*(1-1e-4) && p <= g.rng[1]*(1+1e-4)
}

func (g *Gauge) establishUnit(ctx context.Context) error {
	cmd := g.model.p.Commands["unit"]
	set := g.opts.SetUnit && g.model.pascal != 0
	if set {
		cmd += "," + string(g.model.pascal)
	}
	data, err := g.query(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%s: unit: %w", g.opts.Name, err)
	}
	u, err := g.model.ParseUnit(data)
	if err != nil {
		return fmt.Errorf("%s: unit: %w", g.opts.Name, err)
	}
	if set && u != g.model.pascal {
		return fmt.Errorf("%s: unit: set pa (%c), gauge reports %c: %w", g.opts.Name, g.model.pascal, u, device.ErrReadback)
	}
	g.unit, g.unitKnown = u, true
	return nil
}

// Ident returns the gauge identification (TID, the profile's ident
// command), e.g. "PKR".
func (g *Gauge) Ident(ctx context.Context) (string, error) {
	cmd := g.model.p.Commands["ident"]
	if cmd == "" {
		return "", fmt.Errorf("%s: ident: profile %s names no ident command: %w", g.opts.Name, g.model.p.ID, device.ErrRejected)
	}
	data, err := g.query(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("%s: ident: %w", g.opts.Name, err)
	}
	return string(data), nil
}

// ReadChannels reads every gauge of the profile once, each through its
// mnemonic (hcp-edge probe), after establishing the unit as ReadPressure
// does: the value in the channel's unit, inside its measuring range or not.
func (g *Gauge) ReadChannels(ctx context.Context) []profile.Reading {
	g.mu.Lock()
	defer g.mu.Unlock()
	var uerr error
	if !g.unitKnown {
		uerr = g.establishUnit(ctx)
	}
	var out []profile.Reading
	for _, c := range g.model.p.Channels {
		r := profile.Reading{Channel: c.Name, Command: c.Command, Unit: c.Unit, Range: c.Range}
		data, err := []byte(nil), uerr
		if err == nil {
			data, err = g.query(ctx, c.Command)
		}
		if err == nil {
			var pr device.PressureReading
			pr, err = g.model.ParsePressure(data, g.unit)
			u, _ := profile.PressureUnit(c.Unit)
			r.Raw, r.Value = string(data), float64(pr.Pressure/u)
			r.InRange = err == nil && r.Value >= c.Range[0]*(1-1e-4) && r.Value <= c.Range[1]*(1+1e-4)
		}
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	return out
}

// query runs one mnemonic exchange: "<mnemonic>\r" → ACK CR LF, ENQ → data CR
// LF. NAK at either step is an error wrapping device.ErrRejected.
func (g *Gauge) query(ctx context.Context, mnemonic string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	var data []byte
	err := g.line.Do(ctx, func(tx *serialline.Tx) error {
		crlf := []byte("\r\n")
		if err := tx.Write(ctx, []byte(mnemonic+"\r")); err != nil {
			return err
		}
		reply, err := tx.ReadUntil(ctx, crlf)
		if err != nil {
			return err
		}
		if err := checkAck(reply, mnemonic); err != nil {
			return err
		}
		if err := tx.Write(ctx, []byte{enq}); err != nil {
			return err
		}
		data, err = tx.ReadUntil(ctx, crlf)
		if err != nil {
			return err
		}
		if len(data) == 1 && data[0] == nak {
			return fmt.Errorf("%s: NAK to ENQ: %w", mnemonic, device.ErrRejected)
		}
		return nil
	})
	return data, err
}

func checkAck(reply []byte, mnemonic string) error {
	switch {
	case len(reply) == 1 && reply[0] == ack:
		return nil
	case len(reply) == 1 && reply[0] == nak:
		return fmt.Errorf("%s: NAK: %w", mnemonic, device.ErrRejected)
	}
	return fmt.Errorf("%s: reply %q is neither ACK nor NAK: %w", mnemonic, truncate(reply), device.ErrFrame)
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// ParseUnit parses the data of the unit command: one of the model's unit
// codes.
func (m *Model) ParseUnit(data []byte) (Unit, error) {
	if len(data) != 1 || m.units[Unit(data[0])] == 0 {
		return 0, fmt.Errorf("unit %q: %w", truncate(data), device.ErrFrame)
	}
	return Unit(data[0]), nil
}

// gaugeStatus maps the family's status meanings to the contract's.
var gaugeStatus = map[string]device.GaugeStatus{
	"ok": device.GaugeOK, "underrange": device.GaugeUnderrange, "overrange": device.GaugeOverrange,
	"sensor_off": device.GaugeSensorOff, "no_sensor": device.GaugeNoSensor,
}

// ParsePressure parses the data of a gauge's mnemonic, "s,x.xxxxEsxx" (e.g.
// "0,8.3400E-03"), in unit u. A malformed reply, or a status code the
// profile does not name, is an error wrapping device.ErrFrame; a status
// meaning other than ok, underrange and overrange (sensor error, off, no
// sensor, identification error) returns the reading with an error wrapping
// device.ErrSensor (identification error, which has no device.GaugeStatus
// of its own, as GaugeSensorError).
func (m *Model) ParsePressure(data []byte, u Unit) (device.PressureReading, error) {
	// s , d . d d d d E ± d d
	if len(data) != 12 || data[1] != ',' || data[3] != '.' || data[8] != 'E' ||
		(data[9] != '+' && data[9] != '-') ||
		!digits(data[0:1]) || !digits(data[2:3]) || !digits(data[4:8]) || !digits(data[10:12]) {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: want s,x.xxxxE±xx: %w", truncate(data), device.ErrFrame)
	}
	v, err := strconv.ParseFloat(string(data[2:]), 64)
	unit := m.units[u]
	if err != nil || !device.Finite(v) || unit == 0 {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q in unit %q: %w", data, u, device.ErrFrame)
	}
	r := device.PressureReading{Pressure: device.Pressure(v) * unit}
	meaning, ok := m.p.StatusCodes[string(data[:1])]
	if !ok {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: unknown status %q: %w", data, data[0], device.ErrFrame)
	}
	st, ok := gaugeStatus[meaning]
	if !ok {
		st = device.GaugeSensorError
	}
	r.Status = st
	if st > device.GaugeOverrange || !ok {
		return r, fmt.Errorf("status %c (%s): %w", data[0], strings.ReplaceAll(meaning, "_", " "), device.ErrSensor)
	}
	return r, nil
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
