package gpio

import (
	"context"
	"fmt"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/device"
)

// OutputOpts configures an Output.
type OutputOpts struct {
	// Name names the output in errors and logs, e.g. "relay".
	Name string
	// ActiveLow: "on" drives the pin Low (many relay boards).
	ActiveLow bool
	// Safe is the state ("on" or not) Halt drives the output to, and the state
	// NewOutput puts it in. The interlock relay's safe state is off
	// (de-energised, Low).
	Safe bool
	// FeedbackInverted: the feedback pin reads the opposite of "on" (a
	// normally-closed auxiliary contact). Used only with a feedback pin.
	FeedbackInverted bool
	// Settle is the longest Set waits after writing for the read-back to
	// follow (relay contacts take a few milliseconds to move): it reads the
	// read-back every SettlePoll and confirms once it has read the level
	// written for Stable, or decides on one last read at Settle (a welded or
	// stuck contact fails there with device.ErrReadback).
	Settle time.Duration
	// Stable is how long the read-back must keep the level written before
	// Set takes it as confirmed, over the contact's bounce (0: confirmed on
	// the first read that agrees). Capped at Settle.
	Stable time.Duration
	// IOTimeout bounds one write or read of a pin that implements ContextWriter
	// or ContextReader, within the caller's context.
	IOTimeout time.Duration
	// Clock measures Settle. nil means the real clock.
	Clock Clock
}

// DefaultOutputOpts returns the options of the rig's interlock relay: active
// high, safe state off, 20 ms settle time.
func DefaultOutputOpts(name string) OutputOpts {
	return OutputOpts{Name: name, Settle: 20 * time.Millisecond, Stable: 2 * time.Millisecond, IOTimeout: time.Second}
}

// Output is an on/off output with read-back on a gpio pin, implementing
// device.Switch. The read-back comes from a separate feedback pin when one is
// given (the relay's relay_fb contact), else from the output pin itself.
// Its methods are serialised; it owns no goroutine.
type Output struct {
	out   pgpio.PinOut
	fb    pgpio.PinIn
	opts  OutputOpts
	clock Clock
	self  bool // read back from out itself
	mu    sync.Mutex
}

// NewOutput configures out as an output at the safe state and fb (if non-nil)
// as an input, and returns the Output. Without fb, out must also implement
// gpio.PinIn so it can be read back. It does not wait for or check the
// read-back: call Halt for a confirmed safe state.
func NewOutput(out pgpio.PinOut, fb pgpio.PinIn, opts OutputOpts) (*Output, error) {
	if out == nil {
		return nil, fmt.Errorf("gpio output %q: nil pin: %w", opts.Name, device.ErrOutOfRange)
	}
	if opts.Name == "" {
		opts.Name = out.Name()
	}
	if opts.Settle < 0 || opts.Stable < 0 || opts.IOTimeout < 0 {
		return nil, fmt.Errorf("%s: Settle, Stable and IOTimeout must be >= 0: %w", opts.Name, device.ErrOutOfRange)
	}
	opts.Stable = min(opts.Stable, opts.Settle) // a shorter Settle asks for a quicker verdict
	if opts.IOTimeout == 0 {
		opts.IOTimeout = time.Second
	}
	o := &Output{out: out, fb: fb, opts: opts, clock: opts.Clock}
	if o.clock == nil {
		o.clock = realClock{}
	}
	if fb == nil {
		in, ok := out.(pgpio.PinIn)
		if !ok {
			return nil, fmt.Errorf("%s: pin %s cannot be read back and no feedback pin given: %w", opts.Name, out, device.ErrOutOfRange)
		}
		o.fb, o.self = in, true
	} else if err := fb.In(pgpio.PullNoChange, pgpio.NoEdge); err != nil {
		return nil, fmt.Errorf("%s: configure feedback %s: %w", opts.Name, fb, err)
	}
	if err := o.write(context.Background(), opts.Safe); err != nil {
		return nil, err
	}
	return o, nil
}

// String implements device.Instrument.
func (o *Output) String() string { return o.opts.Name }

// SafeState implements device.Switch.
func (o *Output) SafeState() bool { return o.opts.Safe }

func (o *Output) level(on bool) pgpio.Level { return pgpio.Level(on != o.opts.ActiveLow) }

func (o *Output) write(ctx context.Context, on bool) error {
	l := o.level(on)
	var err error
	if cw, ok := o.out.(ContextWriter); ok {
		ctx, cancel := context.WithTimeout(ctx, o.opts.IOTimeout)
		defer cancel()
		err = cw.OutContext(ctx, l)
	} else if err = ctx.Err(); err != nil {
		err = fmt.Errorf("%w: %w", device.ErrTimeout, err)
	} else {
		err = o.out.Out(l)
	}
	if err != nil {
		return fmt.Errorf("%s: write %v to %s: %w", o.opts.Name, l, o.out, err)
	}
	return nil
}

func (o *Output) readBack(ctx context.Context) (bool, error) {
	var l pgpio.Level
	if cr, ok := o.fb.(ContextReader); ok {
		ctx, cancel := context.WithTimeout(ctx, o.opts.IOTimeout)
		defer cancel()
		var err error
		if l, err = cr.ReadContext(ctx); err != nil {
			return false, fmt.Errorf("%s: read back %s: %w", o.opts.Name, o.fb, err)
		}
	} else if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%s: read back: %w: %w", o.opts.Name, device.ErrTimeout, err)
	} else {
		l = o.fb.Read()
	}
	if o.self {
		return bool(l) != o.opts.ActiveLow, nil
	}
	// A feedback contact follows "on" (High = energised), not the drive level.
	return bool(l) != o.opts.FeedbackInverted, nil
}

// Set implements device.Switch: it writes the level, waits Settle, and reads
// back; a mismatch fails with device.ErrReadback.
func (o *Output) Set(ctx context.Context, on bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.set(ctx, on)
}

func (o *Output) set(ctx context.Context, on bool) error {
	if err := o.write(ctx, on); err != nil {
		return err
	}
	if o.opts.Settle > 0 {
		if ok, err := o.follow(ctx, on); ok || err != nil {
			return err
		}
	}
	got, err := o.readBack(ctx)
	if err != nil {
		return err
	}
	if got != on {
		return fmt.Errorf("%s: wrote %t, read back %t after %v: %w", o.opts.Name, on, got, o.opts.Settle, device.ErrReadback)
	}
	return nil
}

// SettlePoll is how often Set reads the read-back while it waits (at most
// Settle) for it to follow the level written.
const SettlePoll = time.Millisecond

// follow reads the read-back every SettlePoll until it has agreed with on
// for Stable (true), or Settle has passed since the write (false: the
// caller's last read decides), or a read or ctx fails.
func (o *Output) follow(ctx context.Context, on bool) (bool, error) {
	deadline := o.clock.Now().Add(o.opts.Settle)
	var since time.Time // when the read-back began to agree, zero while it does not
	for {
		got, err := o.readBack(ctx)
		if err != nil {
			return false, err
		}
		now := o.clock.Now()
		switch {
		case got != on:
			since = time.Time{}
		case since.IsZero():
			since = now
		}
		if !since.IsZero() && now.Sub(since) >= o.opts.Stable {
			return true, nil
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("%s: waiting for read-back: %w: %w", o.opts.Name, device.ErrTimeout, ctx.Err())
		case <-o.clock.After(min(SettlePoll, left)):
		}
	}
}

// State implements device.Switch: it reads the output back (from the feedback
// pin when there is one).
func (o *Output) State(ctx context.Context) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.readBack(ctx)
}

// Halt drives the output to its safe state and confirms it by read-back. For
// the interlock relay that is de-energised (Low).
func (o *Output) Halt(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.set(ctx, o.opts.Safe); err != nil {
		return fmt.Errorf("halt: %w", err)
	}
	return nil
}

var _ device.Switch = (*Output)(nil)
