package tpg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/serialline"
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
	p     *profile.Profile
	units map[Unit]device.Pressure
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
	}
	return m, nil
}

// Profile is the profile the model was compiled from.
func (m *Model) Profile() *profile.Profile { return m.p }

// Opts configures a gauge.
type Opts struct {
	// Name names the instrument in logs and errors, e.g. "gauge".
	Name string
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
	// Listen is how long Verify listens, before sending anything, for
	// output the controller sends unasked (continuous output, COM: every
	// 100 ms or 1 s; its 1 min mode is not seen in any reasonable wait).
	Listen time.Duration
}

// DefaultOpts returns "gauge", 500 ms per exchange, 9600 8N1, and Verify
// listening 1.2 s for continuous output; the profile has no default.
func DefaultOpts() Opts {
	return Opts{Name: "gauge", Timeout: 500 * time.Millisecond, Line: serialline.DefaultOpts(), Listen: 1200 * time.Millisecond}
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

var (
	_ device.PressureGauge = (*Gauge)(nil)
	_ device.Verifier      = (*Gauge)(nil)
)

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
	if opts.Listen <= 0 {
		opts.Listen = DefaultOpts().Listen
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
// (the unit may have been changed at the front panel, or the controller
// replaced), it reads the unit (UNI without a parameter: the driver never
// changes it) and converts from it.
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

// establishUnit reads the controller's pressure unit (the unit command
// without a parameter): readings are converted from it. It writes nothing.
func (g *Gauge) establishUnit(ctx context.Context) error {
	data, err := g.query(ctx, g.model.p.Commands["unit"])
	if err != nil {
		return fmt.Errorf("%s: unit: %w", g.opts.Name, err)
	}
	u, err := g.model.ParseUnit(data)
	if err != nil {
		return fmt.Errorf("%s: unit: %w", g.opts.Name, err)
	}
	g.unit, g.unitKnown = u, true
	return nil
}

// Ident returns the controller's gauge identification as it sends it
// (TID, the profile's ident command): one field per gauge connector, e.g.
// "PKR,noSEn" (ParseIdent splits it).
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
// LF. NAK is an error wrapping device.ErrRejected, and so is the error word
// in reply to ENQ where other data was asked for: the controller sends it
// when it holds no request (BG 5195 BEN, "Communication protocol"), so the
// mnemonic was lost.
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
		if mnemonic != g.model.errCommand() {
			if w, err := ParseErrorWord(data); err == nil {
				return fmt.Errorf("%s: the controller answered ENQ with its error word %s (%v): it holds no request: %w", mnemonic, w, w, device.ErrRejected)
			}
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
