package alicat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/serialline"
)

// Opts configures one controller.
type Opts struct {
	// Name names the instrument in logs and errors, e.g. "mfc-ar".
	Name string
	// UnitID is the controller's unit id, one capital letter.
	UnitID byte
	// Gas is the gas name the controller must report, e.g. "Ar".
	Gas string
	// FullScale is the controller's range; SetFlow refuses anything above it.
	FullScale device.Flow
	// Timeout bounds one command/reply exchange when the caller's context
	// allows more (or has no deadline).
	Timeout time.Duration
	// Line configures the serial line opened by Open (unused by New).
	Line serialline.Opts
	// Profile is the controller model's (family alicat): its data frame,
	// commands, status codes and ranges. New refuses none.
	Profile *profile.Profile
}

// DefaultOpts returns "mfc", unit A, 500 sccm, 19200 8N1, 500 ms per
// exchange. The gas and the profile have no default: the rig's layout
// names them (New refuses none).
func DefaultOpts() Opts {
	lo := serialline.DefaultOpts()
	lo.Mode.BaudRate = 19200
	return Opts{
		Name:      "mfc",
		UnitID:    'A',
		FullScale: device.SCCM(500),
		Timeout:   500 * time.Millisecond,
		Line:      lo,
	}
}

// MFC is one Alicat-style mass-flow controller on a serial line.
type MFC struct {
	line    *serialline.Line
	ownLine bool
	opts    Opts
	model   *Model
	now     func() time.Time

	mu    sync.Mutex
	units Units // the controller's own, once Verify has read them
}

var _ device.FlowController = (*MFC)(nil)

// New returns the controller with unit id opts.UnitID on line, which it shares
// with any other driver on the same line and does not close. Open the line
// with serialline.Opts.Settle: a data frame does not say which command it
// answers, so a late one must not be read as the next command's reply.
func New(line *serialline.Line, opts Opts) (*MFC, error) {
	if line == nil {
		return nil, errors.New("alicat: nil line")
	}
	if opts.UnitID < 'A' || opts.UnitID > 'Z' {
		return nil, fmt.Errorf("alicat %s: unit id %q is not a capital letter", opts.Name, opts.UnitID)
	}
	if opts.Gas == "" {
		return nil, fmt.Errorf("alicat %s: no gas configured", opts.Name)
	}
	if !device.Finite(float64(opts.FullScale)) || opts.FullScale <= 0 {
		return nil, fmt.Errorf("alicat %s: full scale %v: %w", opts.Name, opts.FullScale, device.ErrOutOfRange)
	}
	model, err := NewModel(opts.Profile)
	if err != nil {
		return nil, fmt.Errorf("alicat %s: %w", opts.Name, err)
	}
	if fs := opts.Profile.FullScale; len(fs) == 2 && (opts.FullScale.SCCM() < fs[0] || opts.FullScale.SCCM() > fs[1]) {
		return nil, fmt.Errorf("alicat %s: full scale %v outside the %s's %g..%g sccm: %w", opts.Name, opts.FullScale, opts.Profile.Model, fs[0], fs[1], device.ErrOutOfRange)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOpts().Timeout
	}
	if opts.Name == "" {
		opts.Name = "mfc-" + string(opts.UnitID)
	}
	return &MFC{line: line, opts: opts, model: model, now: time.Now}, nil
}

// Open opens the serial port at path with opts.Line and returns the controller
// on it; Close closes the port.
func Open(path string, opts Opts) (*MFC, error) {
	lo := opts.Line
	lo.Settle = true // a data frame does not say which command it answers
	m, err := serialline.OpenFor(path, lo, opts.Name, func(line *serialline.Line) (*MFC, error) {
		m, err := New(line, opts)
		if err == nil {
			m.ownLine = true
		}
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("alicat %s: %w", opts.Name, err)
	}
	return m, nil
}

// Close closes the serial line if Open opened it.
func (m *MFC) Close() error {
	if m.ownLine {
		return m.line.Close()
	}
	return nil
}

// String names the instrument.
func (m *MFC) String() string { return m.opts.Name }

// FullScale is the configured range.
func (m *MFC) FullScale() device.Flow { return m.opts.FullScale }

// Model is the controller's model, compiled from its profile.
func (m *MFC) Model() *Model { return m.model }

// ReadFlow polls the controller (`<id>\r`) and returns its data frame. A
// frame with a status code meaning sensor_fault, or a column outside the
// profile's range, is an error wrapping device.ErrSensor, never a reading.
func (m *MFC) ReadFlow(ctx context.Context) (device.FlowStatus, error) {
	f, err := m.command(ctx, "poll", "")
	if err != nil {
		return device.FlowStatus{}, err
	}
	u := m.Units()
	if err := m.model.check(f, u, m.opts.FullScale); err != nil {
		return device.FlowStatus{}, fmt.Errorf("%s: poll: %w", m.opts.Name, err)
	}
	st := m.model.status(f, u)
	st.At = m.now()
	return st, nil
}

// ReadChannels polls the controller once and returns every column of its
// data frame through the profile (hcp-edge probe): read-only.
func (m *MFC) ReadChannels(ctx context.Context) []profile.Reading {
	f, err := m.command(ctx, "poll", "")
	u := m.Units()
	var out []profile.Reading
	for i, c := range m.model.p.Channels {
		r := profile.Reading{Channel: c.Name, Command: string(m.opts.UnitID), Unit: u.of(m.model, i)}
		switch {
		case err != nil:
			r.Error = err.Error()
		default:
			r.Raw, r.Value, r.InRange = f.Fields[i], f.Values[i], true
			if rng, ok := colRange(c, r.Unit, m.opts.FullScale); ok && c.Type != "text" {
				r.Range, r.InRange = rng, r.Value >= rng[0] && r.Value <= rng[1]
			}
		}
		out = append(out, r)
	}
	return out
}

// SetFlow sets the setpoint (`<id>S<value>\r`, in the controller's unit:
// two decimals in sccm, three in slpm) and verifies the
// setpoint in the reply (device.ErrReadback otherwise). A negative, non-finite
// or above-full-scale flow is refused with device.ErrOutOfRange before
// anything is sent. If the valve is held closed (after Halt) and f is above
// zero, SetFlow then cancels the hold (`<id>C`) so the controller resumes
// control to the new setpoint; a zero setpoint leaves the hold in place.
func (m *MFC) SetFlow(ctx context.Context, f device.Flow) error {
	unit := m.Units().of(m.model, m.model.role[profile.RoleSetpoint])
	v, err := f.In(unit)
	if err != nil || !device.Finite(v) || v < 0 || f > m.opts.FullScale {
		return fmt.Errorf("%s: set flow %v (range 0..%v): %w", m.opts.Name, f, m.opts.FullScale, device.ErrOutOfRange)
	}
	arg := strconv.FormatFloat(v, 'f', setpointDecimals(unit), 64)
	sent, _ := strconv.ParseFloat(arg, 64)
	fr, err := m.command(ctx, "set flow", m.model.set+arg)
	if err != nil {
		return err
	}
	if err := m.checkSetpoint(fr, sent); err != nil {
		return err
	}
	if sent > 0 && fr.Held() {
		fr, err = m.command(ctx, "cancel hold", m.model.p.Commands["cancel_hold"])
		if err != nil {
			return err
		}
		if fr.Held() {
			return fmt.Errorf("%s: cancel hold: reply still shows HLD: %w", m.opts.Name, device.ErrReadback)
		}
		return m.checkSetpoint(fr, sent)
	}
	return nil
}

func (m *MFC) checkSetpoint(fr Frame, want float64) error {
	if math.Abs(fr.Setpoint-want) > fr.SetpointRes/2+1e-9 {
		return fmt.Errorf("%s: set flow %g: controller reports setpoint %g: %w", m.opts.Name, want, fr.Setpoint, device.ErrReadback)
	}
	return nil
}

// Halt holds the valve closed (`<id>HC`), sets the setpoint to zero, and
// confirms HLD and the zero setpoint in the reply (a reply to the hold
// without HLD is checked once more by a poll). It tries the setpoint even
// when the hold failed. With a ctx marked device.WithUrgent (the interlock's
// halts), each of these exchanges goes before every routine one waiting for
// the line (package doc).
func (m *MFC) Halt(ctx context.Context) error {
	var errs []error
	fr, err := m.command(ctx, "halt: hold valve closed", m.model.p.Commands["hold_closed"])
	if err == nil && !fr.Held() {
		// A frame without HLD may be a late answer to an earlier poll: the
		// controller's own state, polled anew, decides.
		if fr, err = m.command(ctx, "halt: poll after hold", ""); err == nil && !fr.Held() {
			err = fmt.Errorf("%s: halt: reply to hold has no HLD: %w", m.opts.Name, device.ErrReadback)
		}
	}
	errs = append(errs, err)
	fr, err = m.command(ctx, "halt: setpoint 0", m.model.set+"0.00")
	if err == nil {
		if err = m.checkSetpoint(fr, 0); err == nil && !fr.Held() {
			err = fmt.Errorf("%s: halt: valve not held closed after setpoint 0: %w", m.opts.Name, device.ErrReadback)
		}
	}
	errs = append(errs, err)
	return errors.Join(errs...)
}

// Version returns the firmware version (`<id>VE\r`, the profile's version
// command), e.g. "10v05.0-R24": the reply's first field after the unit id
// (8v17 and 10v20 follow it with a build date).
func (m *MFC) Version(ctx context.Context) (string, error) {
	fw, err := m.firmware(ctx)
	return fw.Raw, err
}

func (m *MFC) firmware(ctx context.Context) (Firmware, error) {
	var fw Firmware
	cmd := m.model.p.Commands["version"]
	if cmd == "" {
		return fw, fmt.Errorf("%s: version: profile %s names no version command: %w", m.opts.Name, m.model.p.ID, device.ErrRejected)
	}
	err := m.exchange(ctx, "version", cmd, func(reply []byte) error {
		var err error
		fw, err = ParseVersion(reply, m.opts.UnitID)
		return err
	})
	return fw, err
}

// Units returns the engineering units the controller's columns are read in:
// the controller's own once Verify has read them, the profile's before.
func (m *MFC) Units() Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.units
}

// command sends `<id><cmd>\r` and parses the data frame that answers it.
func (m *MFC) command(ctx context.Context, op, cmd string) (Frame, error) {
	var fr Frame
	err := m.exchange(ctx, op, cmd, func(reply []byte) error {
		var err error
		fr, err = m.model.ParseFrame(reply, m.opts.UnitID, m.opts.Gas)
		return err
	})
	return fr, err
}

func (m *MFC) exchange(ctx context.Context, op, cmd string, parse func([]byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	err := m.line.Do(ctx, func(tx *serialline.Tx) error {
		if err := tx.Write(ctx, []byte(string(m.opts.UnitID)+cmd+"\r")); err != nil {
			return err
		}
		reply, err := tx.ReadUntil(ctx, []byte("\r"))
		if err != nil {
			return err
		}
		return parse(reply)
	})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", m.opts.Name, op, err)
	}
	return nil
}
