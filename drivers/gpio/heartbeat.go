package gpio

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/device"
)

// MinHeartbeatPeriod is the shortest period Heartbeat.Start accepts.
const MinHeartbeatPeriod = time.Millisecond

// HeartbeatOpts configures a Heartbeat.
type HeartbeatOpts struct {
	// Name names the heartbeat in errors and logs (default: the pin's name).
	Name string
	// IOTimeout bounds one write of a pin that implements ContextWriter
	// (default 1 s). Keep it below the watchdog's timeout.
	IOTimeout time.Duration
	// OnError, when set, is called from the heartbeat's goroutine with every
	// failed write: an error naming the heartbeat and wrapping the pin's
	// (device.ErrTimeout, device.ErrClosed, ... for simgpio pins). It must
	// return quickly: the next beat waits for it.
	OnError func(error)
	// Logger receives a warning at the first failed write of a run of
	// failures, and a notice when writes succeed again (nil: no logs).
	Logger *slog.Logger
	// Clock schedules the beats. nil means the real clock.
	Clock Clock
}

// DefaultHeartbeatOpts returns the options of the rig's relay-watchdog
// heartbeat: writes bounded to one second.
func DefaultHeartbeatOpts(name string) HeartbeatOpts {
	return HeartbeatOpts{Name: name, IOTimeout: time.Second}
}

// HeartbeatStats is what a Heartbeat has done so far.
type HeartbeatStats struct {
	// Beats counts the writes that succeeded, each the opposite of the level
	// last written (the two writes of Start count as one).
	Beats uint64
	// Failures counts the writes that failed.
	Failures uint64
	// LastBeat is the Clock time of the last successful write.
	LastBeat time.Time
	// LastErr is the last failed write's error; nil once a write succeeds
	// again.
	LastErr error
	// Running: started, and neither closed nor stopped by its context.
	Running bool
}

// Heartbeat toggles an output pin every period from a goroutine it owns: the
// pulse input of a relay watchdog (a cycle-monitoring "dead-man" relay) that
// keeps the interlock relay energised only while the pin keeps changing level.
// If the agent dies, hangs or loses the line, the beats stop and the watchdog
// drops the relay by itself: a dead-agent path that needs nothing from the
// furnace controller (many have no comms watchdog).
//
// NewHeartbeat configures it; Start writes the first edge and launches the
// goroutine; Close stops it and waits. Its methods are safe for concurrent
// use.
type Heartbeat struct {
	pin   pgpio.PinOut
	opts  HeartbeatOpts
	clock Clock
	ctx   context.Context // cancelled by Close
	close context.CancelFunc
	wg    sync.WaitGroup

	mu      sync.Mutex
	level   pgpio.Level // the level last written successfully
	started bool
	closed  bool
	running bool
	failing bool // the last write failed (for the log)
	stats   HeartbeatStats
}

// NewHeartbeat returns a Heartbeat on pin. It writes nothing until Start.
func NewHeartbeat(pin pgpio.PinOut, opts HeartbeatOpts) (*Heartbeat, error) {
	if pin == nil {
		return nil, fmt.Errorf("gpio heartbeat %q: nil pin: %w", opts.Name, device.ErrOutOfRange)
	}
	if opts.Name == "" {
		opts.Name = pin.Name()
	}
	if opts.IOTimeout < 0 {
		return nil, fmt.Errorf("%s: IOTimeout must be >= 0: %w", opts.Name, device.ErrOutOfRange)
	}
	if opts.IOTimeout == 0 {
		opts.IOTimeout = time.Second
	}
	h := &Heartbeat{pin: pin, opts: opts, clock: opts.Clock}
	if h.clock == nil {
		h.clock = realClock{}
	}
	h.ctx, h.close = context.WithCancel(context.Background())
	return h, nil
}

// String names the heartbeat.
func (h *Heartbeat) String() string { return h.opts.Name }

// Start writes Low then High — an edge whatever level the line had, so a
// watchdog sees the heartbeat alive as soon as Start returns — and launches
// the goroutine that toggles the pin every period from then on, until ctx is
// done or Close. If the first edge cannot be written Start returns the error
// and launches nothing (it may be called again). It fails with
// device.ErrOutOfRange for a period below MinHeartbeatPeriod, with
// device.ErrClosed after Close, and when already started.
//
// Choose period well below the watchdog's timeout T: a beat may be late by a
// write's latency (up to IOTimeout) and the scheduler's, and a late beat is
// a dropped relay. A quarter of T or less is a sound choice.
func (h *Heartbeat) Start(ctx context.Context, period time.Duration) error {
	if period < MinHeartbeatPeriod {
		return fmt.Errorf("%s: period %v below %v: %w", h.opts.Name, period, MinHeartbeatPeriod, device.ErrOutOfRange)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return fmt.Errorf("%s: start: %w", h.opts.Name, device.ErrClosed)
	case h.started:
		return fmt.Errorf("%s: already started", h.opts.Name)
	}
	run, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel) // Close ends the run
	for _, l := range []pgpio.Level{pgpio.Low, pgpio.High} {
		if err := h.write(run, l); err != nil {
			stop()
			cancel()
			h.failedLocked(err)
			return err
		}
	}
	h.succeededLocked(pgpio.High)
	h.started, h.running = true, true
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer stop()
		defer cancel()
		h.beat(run, period)
	}()
	return nil
}

// beat is the goroutine: a toggle at every period after Start's edge, on a
// fixed schedule; a beat that falls due while a write is still in progress
// is written as soon as that write ends, never in a burst.
func (h *Heartbeat) beat(ctx context.Context, period time.Duration) {
	defer func() {
		h.mu.Lock()
		h.running = false
		h.mu.Unlock()
	}()
	next := h.clock.Now().Add(period)
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.clock.After(next.Sub(h.clock.Now())):
		}
		h.mu.Lock()
		target := !h.level
		h.mu.Unlock()
		err := h.write(ctx, target)
		if ctx.Err() != nil {
			return // stopped during the write: not a failure of the line
		}
		h.mu.Lock()
		if err != nil {
			h.failedLocked(err)
		} else {
			h.succeededLocked(target)
		}
		h.mu.Unlock()
		if err != nil && h.opts.OnError != nil {
			h.opts.OnError(err)
		}
		next = next.Add(period)
		if now := h.clock.Now(); next.Before(now) {
			next = now
		}
	}
}

// write drives the pin to l, within IOTimeout for a ContextWriter pin.
func (h *Heartbeat) write(ctx context.Context, l pgpio.Level) error {
	var err error
	if cw, ok := h.pin.(ContextWriter); ok {
		wctx, cancel := context.WithTimeout(ctx, h.opts.IOTimeout)
		err = cw.OutContext(wctx, l)
		cancel()
	} else if err = ctx.Err(); err != nil {
		err = fmt.Errorf("%w: %w", device.ErrTimeout, err)
	} else {
		err = h.pin.Out(l)
	}
	if err != nil {
		return fmt.Errorf("%s: write %v to %s: %w", h.opts.Name, l, h.pin, err)
	}
	return nil
}

// failedLocked counts a failed write and logs the first of a run. The level
// stays the last one written, so the next beat retries the same edge.
func (h *Heartbeat) failedLocked(err error) {
	h.stats.Failures++
	h.stats.LastErr = err
	if !h.failing && h.opts.Logger != nil {
		h.opts.Logger.Warn("heartbeat write failed; the relay watchdog drops the relay if this lasts", "heartbeat", h.opts.Name, "err", err)
	}
	h.failing = true
}

func (h *Heartbeat) succeededLocked(l pgpio.Level) {
	h.level = l
	h.stats.Beats++
	h.stats.LastBeat = h.clock.Now()
	h.stats.LastErr = nil
	if h.failing && h.opts.Logger != nil {
		h.opts.Logger.Info("heartbeat writes succeed again", "heartbeat", h.opts.Name, "failures", h.stats.Failures)
	}
	h.failing = false
}

// Stats returns what the heartbeat has done so far.
func (h *Heartbeat) Stats() HeartbeatStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.Running = h.running
	return s
}

// Close stops the goroutine (a write in progress on a ContextWriter pin is
// cut short) and waits for it. It writes nothing more: the line keeps its
// last level, and a watchdog fed by it drops the relay one timeout later.
// Later calls return nil; Start fails after Close.
func (h *Heartbeat) Close() error {
	h.close()
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}
