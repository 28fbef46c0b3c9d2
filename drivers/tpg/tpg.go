package tpg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/serialline"
)

// Control characters of the mnemonic protocol.
const (
	ack = 0x06
	nak = 0x15
	enq = 0x05
)

// Unit is a pressure unit digit of the UNI mnemonic.
type Unit int

// Units of the UNI mnemonic.
const (
	Millibar Unit = 0
	Torr     Unit = 1
	Pascal   Unit = 2
)

// pressure converts v in u to a device.Pressure.
func (u Unit) pressure(v float64) (device.Pressure, error) {
	switch u {
	case Millibar:
		return device.Pressure(v) * device.Millibar, nil
	case Torr:
		return device.Pressure(v) * device.Torr, nil
	case Pascal:
		return device.Pressure(v) * device.Pascal, nil
	}
	return 0, fmt.Errorf("unknown unit %d", int(u))
}

func (u Unit) String() string {
	switch u {
	case Millibar:
		return "mbar"
	case Torr:
		return "Torr"
	case Pascal:
		return "Pa"
	}
	return "unit " + strconv.Itoa(int(u))
}

// Opts configures a gauge.
type Opts struct {
	// Name names the instrument in logs and errors, e.g. "gauge".
	Name string
	// SetUnit makes the driver write UNI,2 (pascal) before the first reading;
	// when false it reads UNI and converts from whatever unit the gauge uses.
	SetUnit bool
	// Timeout bounds one command exchange (mnemonic, ACK, ENQ, data) when the
	// caller's context allows more (or has no deadline).
	Timeout time.Duration
	// Line configures the serial line opened by Open (unused by New).
	Line serialline.Opts
}

// DefaultOpts returns "gauge", SetUnit, 500 ms per exchange, 9600 8N1.
func DefaultOpts() Opts {
	return Opts{Name: "gauge", SetUnit: true, Timeout: 500 * time.Millisecond, Line: serialline.DefaultOpts()}
}

// Gauge is a Pfeiffer TPG-style gauge controller (gauge 1).
type Gauge struct {
	line    *serialline.Line
	ownLine bool
	opts    Opts
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
	return &Gauge{line: line, opts: opts, now: time.Now}, nil
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

// ReadPressure reads gauge 1 (PR1). Statuses 0..2 (ok, underrange, overrange)
// come with a nil error; 3..6 come with the reading and an error wrapping
// device.ErrSensor. Before the first reading, and after any failed exchange
// (the controller may have been power-cycled back to mbar), it establishes the
// unit (UNI,2 or UNI, per Opts.SetUnit).
func (g *Gauge) ReadPressure(ctx context.Context) (device.PressureReading, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.unitKnown {
		if err := g.establishUnit(ctx); err != nil {
			return device.PressureReading{}, err
		}
	}
	sent := g.now()
	data, err := g.query(ctx, "PR1")
	if err != nil {
		g.unitKnown = false
		return device.PressureReading{}, fmt.Errorf("%s: read pressure: %w", g.opts.Name, err)
	}
	r, err := ParsePressure(data, g.unit)
	r.At, r.Sent = g.now(), sent
	if err != nil {
		if !errors.Is(err, device.ErrSensor) {
			g.unitKnown = false
		}
		return r, fmt.Errorf("%s: read pressure: %w", g.opts.Name, err)
	}
	return r, nil
}

func (g *Gauge) establishUnit(ctx context.Context) error {
	cmd := "UNI"
	if g.opts.SetUnit {
		cmd = "UNI,2"
	}
	data, err := g.query(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%s: unit: %w", g.opts.Name, err)
	}
	u, err := ParseUnit(data)
	if err != nil {
		return fmt.Errorf("%s: unit: %w", g.opts.Name, err)
	}
	if g.opts.SetUnit && u != Pascal {
		return fmt.Errorf("%s: unit: set Pa, gauge reports %v: %w", g.opts.Name, u, device.ErrReadback)
	}
	g.unit, g.unitKnown = u, true
	return nil
}

// Ident returns the gauge identification (TID), e.g. "PKR".
func (g *Gauge) Ident(ctx context.Context) (string, error) {
	data, err := g.query(ctx, "TID")
	if err != nil {
		return "", fmt.Errorf("%s: ident: %w", g.opts.Name, err)
	}
	return string(data), nil
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

// ParseUnit parses the data of UNI: one digit 0, 1 or 2.
func ParseUnit(data []byte) (Unit, error) {
	if len(data) != 1 || data[0] < '0' || data[0] > '2' {
		return 0, fmt.Errorf("unit %q: %w", truncate(data), device.ErrFrame)
	}
	return Unit(data[0] - '0'), nil
}

// ParsePressure parses the data of PR1, "s,x.xxxxEsxx" (e.g. "0,8.3400E-03"),
// in unit u. A malformed reply is an error wrapping device.ErrFrame; statuses
// 3 (sensor error), 4 (off), 5 (no sensor) and 6 (identification error) return
// the reading with an error wrapping device.ErrSensor. Status 6 has no
// device.GaugeStatus of its own and is reported as GaugeSensorError.
func ParsePressure(data []byte, u Unit) (device.PressureReading, error) {
	// s , d . d d d d E ± d d
	if len(data) != 12 || data[1] != ',' || data[3] != '.' || data[8] != 'E' ||
		(data[9] != '+' && data[9] != '-') ||
		!digits(data[0:1]) || !digits(data[2:3]) || !digits(data[4:8]) || !digits(data[10:12]) {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: want s,x.xxxxE±xx: %w", truncate(data), device.ErrFrame)
	}
	v, err := strconv.ParseFloat(string(data[2:]), 64)
	if err != nil || !device.Finite(v) {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: %w", data, device.ErrFrame)
	}
	p, err := u.pressure(v)
	if err != nil {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: %v: %w", data, err, device.ErrFrame)
	}
	r := device.PressureReading{Pressure: p}
	switch s := data[0]; s {
	case '0':
		r.Status = device.GaugeOK
	case '1':
		r.Status = device.GaugeUnderrange
	case '2':
		r.Status = device.GaugeOverrange
	case '3':
		r.Status = device.GaugeSensorError
		return r, fmt.Errorf("status 3 (sensor error): %w", device.ErrSensor)
	case '4':
		r.Status = device.GaugeSensorOff
		return r, fmt.Errorf("status 4 (sensor off): %w", device.ErrSensor)
	case '5':
		r.Status = device.GaugeNoSensor
		return r, fmt.Errorf("status 5 (no sensor): %w", device.ErrSensor)
	case '6':
		r.Status = device.GaugeSensorError
		return r, fmt.Errorf("status 6 (identification error): %w", device.ErrSensor)
	default:
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: unknown status %q: %w", data, s, device.ErrFrame)
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
