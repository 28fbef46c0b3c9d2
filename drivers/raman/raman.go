package raman

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/serialline"
)

// Integration limits of ACQ.
const (
	MinIntegration = 10 * time.Millisecond
	MaxIntegration = 60 * time.Second
)

// Opts configures a spectrometer.
type Opts struct {
	// Name names the instrument in logs and errors, e.g. "raman".
	Name string
	// TimeScale is how much faster than wall-clock time the instrument
	// integrates (the simulator's sim seconds per wall second); the expected
	// wall-clock duration of an acquisition is integration / TimeScale. 0 or 1:
	// integration is wall-clock time, as on real hardware.
	TimeScale float64
	// Transfer is the allowance beyond the expected integration for the reply
	// to start and the block to arrive.
	Transfer time.Duration
	// Timeout bounds short exchanges (*IDN?, STOP) when the caller's context
	// allows more (or has no deadline).
	Timeout time.Duration
	// MaxPoints is the largest spectrum accepted.
	MaxPoints int
	// Line configures the serial line opened by Open (unused by New).
	Line serialline.Opts
}

// DefaultOpts returns "raman", wall-clock integration, 3 s transfer
// allowance, 1 s for short exchanges, at most 8192 points, 115200 8N1.
func DefaultOpts() Opts {
	lo := serialline.DefaultOpts()
	lo.Mode.BaudRate = 115200
	return Opts{Name: "raman", TimeScale: 1, Transfer: 3 * time.Second, Timeout: time.Second, MaxPoints: 8192, Line: lo}
}

// Spectrometer is the rig's Raman spectrometer on a serial line.
type Spectrometer struct {
	line    *serialline.Line
	ownLine bool
	opts    Opts
	now     func() time.Time

	mu    sync.Mutex
	abort context.CancelFunc // cancels the acquisition in progress, if any
}

var _ device.Spectrometer = (*Spectrometer)(nil)

// New returns the spectrometer on line, which it does not close.
func New(line *serialline.Line, opts Opts) (*Spectrometer, error) {
	if line == nil {
		return nil, errors.New("raman: nil line")
	}
	d := DefaultOpts()
	if opts.Name == "" {
		opts.Name = d.Name
	}
	if opts.TimeScale == 0 {
		opts.TimeScale = 1
	}
	if !device.Finite(opts.TimeScale) || opts.TimeScale < 0 {
		return nil, fmt.Errorf("raman %s: time scale %v: %w", opts.Name, opts.TimeScale, device.ErrOutOfRange)
	}
	if opts.Transfer <= 0 {
		opts.Transfer = d.Transfer
	}
	if opts.Timeout <= 0 {
		opts.Timeout = d.Timeout
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = d.MaxPoints
	}
	return &Spectrometer{line: line, opts: opts, now: time.Now}, nil
}

// Open opens the serial port at path with opts.Line and returns the
// spectrometer on it; Close closes the port.
func Open(path string, opts Opts) (*Spectrometer, error) {
	s, err := serialline.OpenFor(path, opts.Line, opts.Name, func(line *serialline.Line) (*Spectrometer, error) {
		s, err := New(line, opts)
		if err == nil {
			s.ownLine = true
		}
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("raman %s: %w", opts.Name, err)
	}
	return s, nil
}

// Close closes the serial line if Open opened it.
func (s *Spectrometer) Close() error {
	if s.ownLine {
		return s.line.Close()
	}
	return nil
}

// String names the instrument.
func (s *Spectrometer) String() string { return s.opts.Name }

// Expected returns the wall-clock time an acquisition of integration should
// take, before transfer.
func (s *Spectrometer) Expected(integration time.Duration) time.Duration {
	return time.Duration(float64(integration) / s.opts.TimeScale)
}

// Acquire sends `ACQ <ms>` and reads the data block, verifying the point
// count, increasing shifts and the CRC-32 (device.ErrChecksum). integration is
// rounded to whole milliseconds and must lie within 10 ms .. 60 s
// (device.ErrOutOfRange otherwise, nothing sent). The wait is bounded by
// Expected(integration) + Opts.Transfer and by ctx; when either runs out, or
// ctx is cancelled, or Halt is called, Acquire sends STOP before it returns.
// An "ERR n" reply is an *Error (CodeBusy when another acquisition runs).
func (s *Spectrometer) Acquire(ctx context.Context, integration time.Duration) (device.Spectrum, error) {
	integration = integration.Round(time.Millisecond)
	if integration < MinIntegration || integration > MaxIntegration {
		return device.Spectrum{}, fmt.Errorf("%s: integration %v (range %v..%v): %w", s.opts.Name, integration, MinIntegration, MaxIntegration, device.ErrOutOfRange)
	}
	actx, cancel := context.WithTimeout(ctx, s.Expected(integration)+s.opts.Transfer)
	defer cancel()
	s.mu.Lock()
	s.abort = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.abort = nil
		s.mu.Unlock()
	}()

	var sp device.Spectrum
	err := s.line.Do(actx, func(tx *serialline.Tx) error {
		cmd := "ACQ " + strconv.FormatInt(integration.Milliseconds(), 10) + "\r\n"
		if err := tx.Write(actx, []byte(cmd)); err != nil {
			return err
		}
		b := newBlock(s.opts.MaxPoints)
		for {
			line, err := tx.ReadUntil(actx, crlf)
			if err != nil {
				if actx.Err() != nil || errors.Is(err, device.ErrTimeout) {
					return errors.Join(err, s.stop(ctx, tx))
				}
				return err
			}
			done, err := b.feed(line)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) && !errors.Is(err, device.ErrChecksum) && !isEnd(line) {
					s.drain(actx, tx)
				}
				return err
			}
			if done {
				sp = device.Spectrum{Shift: b.shift, Counts: b.counts, Integration: integration, At: s.now()}
				return nil
			}
		}
	})
	if err != nil {
		return device.Spectrum{}, fmt.Errorf("%s: acquire %v: %w", s.opts.Name, integration, err)
	}
	return sp, nil
}

var crlf = []byte("\r\n")

func isEnd(line []byte) bool { return len(line) >= 3 && string(line[:3]) == "END" }

// drain reads the rest of a block that failed to parse, so its tail does not
// reach the next command; it gives up after a short silence.
func (s *Spectrometer) drain(ctx context.Context, tx *serialline.Tx) {
	for {
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		line, err := tx.ReadUntil(dctx, crlf)
		cancel()
		if err != nil || isEnd(line) {
			return
		}
	}
}

// stop sends STOP within the transaction and waits until the instrument
// confirms, skipping any data lines still arriving. It uses its own deadline
// (Opts.Timeout), as the caller's context may already be done.
func (s *Spectrometer) stop(ctx context.Context, tx *serialline.Tx) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.Timeout)
	defer cancel()
	if err := tx.Write(sctx, []byte("STOP\r\n")); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	for {
		line, err := tx.ReadUntil(sctx, crlf)
		if err != nil {
			return fmt.Errorf("stop: not confirmed: %w", err)
		}
		switch string(line) {
		case "OK":
			return nil
		case "ERR 4 aborted":
			// The aborted acquisition's reply; STOP's own OK may follow.
			octx, cancel := context.WithTimeout(sctx, 100*time.Millisecond)
			_, _ = tx.ReadUntil(octx, crlf)
			cancel()
			return nil
		}
		if e, ok, _ := parseErr(string(line)); ok && e != nil && e.Code != CodeAborted {
			return fmt.Errorf("stop: %w", e)
		}
	}
}

// Halt cancels an acquisition in progress (which then sends STOP itself), then
// sends STOP and waits for its confirmation: the acquisition is stopped and the
// laser off. With a ctx marked device.WithUrgent (the interlock's halts), its
// STOP goes before every routine transaction waiting for the line
// (serialline.Line.Do).
func (s *Spectrometer) Halt(ctx context.Context) error {
	s.mu.Lock()
	if s.abort != nil {
		s.abort()
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*s.opts.Timeout)
	defer cancel()
	err := s.line.Do(ctx, func(tx *serialline.Tx) error { return s.stop(ctx, tx) })
	if err != nil {
		return fmt.Errorf("%s: halt: %w", s.opts.Name, err)
	}
	return nil
}

// Identify returns the answer to *IDN?, e.g. "HCP-SIM,RAMAN-532,SN0001,1.0".
func (s *Spectrometer) Identify(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var id string
	err := s.line.Do(ctx, func(tx *serialline.Tx) error {
		if err := tx.Write(ctx, []byte("*IDN?\r\n")); err != nil {
			return err
		}
		line, err := tx.ReadUntil(ctx, crlf)
		if err != nil {
			return err
		}
		if e, ok, perr := parseErr(string(line)); ok {
			if perr != nil {
				return perr
			}
			return e
		}
		id = string(line)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%s: identify: %w", s.opts.Name, err)
	}
	return id, nil
}
