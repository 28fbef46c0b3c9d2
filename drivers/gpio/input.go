package gpio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/device"
)

// Clock is the time source the drivers measure debounce and settle times with.
// devicetest.FakeClock and devicetest.RealClock satisfy it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ContextReader is implemented by pins whose reads travel over a link and can
// fail (simgpio's pins). The drivers use it instead of gpio.PinIn.Read when
// present, so errors and deadlines reach the caller.
type ContextReader interface {
	ReadContext(ctx context.Context) (pgpio.Level, error)
}

// ContextWriter is implemented by pins whose writes travel over a link; the
// drivers use it instead of gpio.PinOut.Out when present.
type ContextWriter interface {
	OutContext(ctx context.Context, l pgpio.Level) error
}

// LevelWaiter is implemented by pins whose wait for an edge reads the level
// as it ends (the simulator's long poll answers with it): the watcher then
// samples that level instead of reading the pin again after every wake-up,
// one exchange per wait instead of two, at the same sampling rate.
// WaitForLevel returns after at most timeout (plus the pin's own per-call
// bound) with the level the pin reported as the wait ended, changed or not,
// or an error (the pin could not be read); it returns at once when ctx ends.
type LevelWaiter interface {
	WaitForLevel(ctx context.Context, timeout time.Duration) (pgpio.Level, error)
}

// InputOpts configures an Input.
type InputOpts struct {
	// Name names the input in errors and logs, e.g. "estop".
	Name string
	// ActiveLow: a Low level means the input's condition holds (e-stop pressed,
	// leak detected). The rig's estop and leak inputs are active-low.
	ActiveLow bool
	// Pull is passed to the pin's In.
	Pull pgpio.Pull
	// Debounce is how long a new level must hold before it is reported.
	// 0 reports every level the watcher samples.
	Debounce time.Duration
	// Wait is the finite timeout of each WaitForEdge call of the watcher (and
	// the polling period when the pin has no edge detection). Must be > 0.
	Wait time.Duration
	// ReadTimeout bounds one read of a pin that implements ContextReader.
	ReadTimeout time.Duration
	// Clock measures Debounce. nil means the real clock.
	Clock Clock
}

// DefaultInputOpts returns the options for an active-low, 20 ms debounced input
// such as the rig's e-stop.
func DefaultInputOpts(name string) InputOpts {
	return InputOpts{
		Name: name, ActiveLow: true, Pull: pgpio.PullNoChange,
		Debounce: 20 * time.Millisecond, Wait: 100 * time.Millisecond,
		ReadTimeout: time.Second,
	}
}

// Event is a debounced change of an Input, or a failure to read it.
type Event struct {
	Active bool      // the input's condition holds (after ActiveLow is applied)
	At     time.Time // when the new level was confirmed (Clock time)
	Err    error     // non-nil: the pin could not be read; Active is the last known state
}

// Input is a debounced digital input on a gpio.PinIn, implementing
// device.DigitalInput. Start launches a watcher goroutine that delivers
// debounced changes to subscribers; Close stops it and waits for it.
type Input struct {
	pin   pgpio.PinIn
	opts  InputOpts
	clock Clock
	edges bool // the pin accepted edge detection

	mu      sync.Mutex
	active  bool      // debounced state, valid once started
	lastErr error     // sticky read error of the watcher
	cand    *bool     // pending new level, being debounced
	since   time.Time // when cand was first seen
	subs    map[chan Event]struct{}
	started bool
	closed  bool
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// NewInput configures pin as an input (with edge detection on both edges when
// the pin supports it, else polling) and returns the Input. It does not start
// the watcher.
func NewInput(pin pgpio.PinIn, opts InputOpts) (*Input, error) {
	if pin == nil {
		return nil, fmt.Errorf("gpio input %q: nil pin: %w", opts.Name, device.ErrOutOfRange)
	}
	if opts.Name == "" {
		opts.Name = pin.Name()
	}
	if opts.Wait <= 0 || opts.Debounce < 0 || opts.ReadTimeout < 0 {
		return nil, fmt.Errorf("%s: Wait must be > 0 and Debounce, ReadTimeout >= 0: %w", opts.Name, device.ErrOutOfRange)
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = time.Second
	}
	in := &Input{pin: pin, opts: opts, clock: opts.Clock, subs: map[chan Event]struct{}{}}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	if in.clock == nil {
		in.clock = realClock{}
	}
	if err := pin.In(opts.Pull, pgpio.BothEdges); err == nil {
		in.edges = true
	} else if err2 := pin.In(opts.Pull, pgpio.NoEdge); err2 != nil {
		return nil, fmt.Errorf("%s: configure %s as input: %w", opts.Name, pin, errors.Join(err, err2))
	}
	return in, nil
}

// String implements device.DigitalInput.
func (in *Input) String() string { return in.opts.Name }

func (in *Input) toActive(l pgpio.Level) bool { return bool(l) != in.opts.ActiveLow }

// readRaw reads the pin once, through ContextReader when the pin has it.
func (in *Input) readRaw(ctx context.Context) (bool, error) {
	if cr, ok := in.pin.(ContextReader); ok {
		ctx, cancel := context.WithTimeout(ctx, in.opts.ReadTimeout)
		defer cancel()
		l, err := cr.ReadContext(ctx)
		if err != nil {
			return false, fmt.Errorf("%s: read %s: %w", in.opts.Name, in.pin, err)
		}
		return in.toActive(l), nil
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%s: read: %w: %w", in.opts.Name, device.ErrTimeout, err)
	}
	return in.toActive(in.pin.Read()), nil
}

// Read implements device.DigitalInput. While the watcher runs it returns the
// debounced state it tracks (or its last read error). Otherwise it samples the
// pin until the level has held for Debounce, within ctx.
func (in *Input) Read(ctx context.Context) (bool, error) {
	in.mu.Lock()
	closed, started, active, lastErr := in.closed, in.started, in.active, in.lastErr
	in.mu.Unlock()
	switch {
	case closed:
		return false, fmt.Errorf("%s: %w", in.opts.Name, device.ErrClosed)
	case ctx.Err() != nil:
		return false, fmt.Errorf("%s: read: %w: %w", in.opts.Name, device.ErrTimeout, ctx.Err())
	case started && lastErr != nil:
		return active, lastErr
	case started:
		return active, nil
	}
	v, err := in.readRaw(ctx)
	if err != nil || in.opts.Debounce == 0 {
		return v, err
	}
	step := max(in.opts.Debounce/4, time.Millisecond)
	since := in.clock.Now()
	for {
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("%s: level did not settle: %w: %w", in.opts.Name, device.ErrTimeout, ctx.Err())
		case <-in.clock.After(step):
		}
		w, err := in.readRaw(ctx)
		if err != nil {
			return w, err
		}
		now := in.clock.Now()
		if w != v {
			v, since = w, now
			continue
		}
		if now.Sub(since) >= in.opts.Debounce {
			return v, nil
		}
	}
}

// Subscribe returns a channel that receives every debounced change (and read
// failure) from the watcher, and a function that cancels the subscription.
// Delivery never blocks the watcher: the channel holds one event, and when the
// subscriber lags an undelivered older event is replaced by the newest, so the
// newest state is never lost. The channel is closed by cancel or Close.
func (in *Input) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 1)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		close(ch)
		return ch, func() {}
	}
	in.subs[ch] = struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			in.mu.Lock()
			defer in.mu.Unlock()
			if _, ok := in.subs[ch]; ok {
				delete(in.subs, ch)
				close(ch)
			}
		})
	}
}

// publishLocked delivers ev to every subscriber without blocking.
func (in *Input) publishLocked(ev Event) {
	for ch := range in.subs {
		select {
		case <-ch: // drop the stale event; we are the only sender
		default:
		}
		select {
		case ch <- ev:
		default:
		}
	}
}

// Start reads the initial level (which becomes the debounced state at once)
// and launches the watcher goroutine. It fails if the first read fails or the
// Input is closed or already started.
func (in *Input) Start(ctx context.Context) error {
	v, err := in.readRaw(ctx)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return fmt.Errorf("%s: start: %w", in.opts.Name, device.ErrClosed)
	}
	if in.started {
		return fmt.Errorf("%s: already started", in.opts.Name)
	}
	in.started, in.active = true, v
	in.wg.Add(1)
	go in.watch()
	return nil
}

// Close stops the watcher, waits for it (at most one Wait period plus one
// read), and closes the subscription channels. Later calls return nil.
func (in *Input) Close() error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	in.cancel()
	in.mu.Unlock()
	in.wg.Wait()
	in.mu.Lock()
	defer in.mu.Unlock()
	for ch := range in.subs {
		close(ch)
		delete(in.subs, ch)
	}
	return nil
}

func (in *Input) stopped() bool { return in.ctx.Err() != nil }

// watch is the watcher loop: wait (finite timeout) for an edge or poll, re-read
// the level after every wake-up whatever woke it (or, for a LevelWaiter pin,
// take the level the wait ended on), and debounce.
func (in *Input) watch() {
	defer in.wg.Done()
	for !in.stopped() {
		wait := in.opts.Wait
		in.mu.Lock()
		if in.cand != nil {
			// Wake up in time to confirm the pending level.
			wait = max(min(wait, in.opts.Debounce-in.clock.Now().Sub(in.since)), time.Millisecond)
		}
		in.mu.Unlock()
		if lw, ok := in.pin.(LevelWaiter); ok && in.edges {
			in.waitForLevel(lw, wait)
			continue
		}
		if in.edges {
			in.pin.WaitForEdge(wait)
		} else {
			select {
			case <-in.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if in.stopped() {
			return
		}
		v, err := in.readRaw(in.ctx)
		if in.stopped() {
			return
		}
		in.sample(v, err)
	}
}

// waitForLevel is one turn of the watcher for a LevelWaiter pin: the level
// the wait ended on is the sample. After a failure it waits out the rest of
// wait, so that a pin that fails at once is not asked again at once.
func (in *Input) waitForLevel(lw LevelWaiter, wait time.Duration) {
	start := time.Now()
	l, err := lw.WaitForLevel(in.ctx, wait)
	if in.stopped() {
		return
	}
	if err != nil {
		in.sample(false, fmt.Errorf("%s: read %s: %w", in.opts.Name, in.pin, err))
		if rest := wait - time.Since(start); rest > 0 {
			t := time.NewTimer(rest)
			defer t.Stop()
			select {
			case <-in.ctx.Done():
			case <-t.C:
			}
		}
		return
	}
	in.sample(in.toActive(l), nil)
}

// sample feeds one reading into the debouncer.
func (in *Input) sample(v bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	now := in.clock.Now()
	if err != nil {
		if in.lastErr == nil {
			in.publishLocked(Event{Active: in.active, At: now, Err: err})
		}
		in.lastErr = err
		return
	}
	recovered := in.lastErr != nil
	in.lastErr = nil
	switch {
	case v == in.active:
		in.cand = nil
		if recovered {
			in.publishLocked(Event{Active: in.active, At: now})
		}
		return
	case in.cand == nil || *in.cand != v:
		in.cand, in.since = &v, now
	}
	if now.Sub(in.since) >= in.opts.Debounce {
		in.active, in.cand = v, nil
		in.publishLocked(Event{Active: v, At: now})
	} else if recovered {
		in.publishLocked(Event{Active: in.active, At: now})
	}
}

// pending reports whether a new level is being debounced (for tests).
func (in *Input) pending() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cand != nil
}

var _ device.DigitalInput = (*Input)(nil)
