package devicetest

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is the small clock abstraction the fakes (and drivers that accept an
// injected clock) use: the current instant, a one-shot timer and a ticker.
// RealClock is backed by package time; FakeClock only moves when told to.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed.
	After(d time.Duration) <-chan time.Time
	// NewTicker returns a ticker with period d. A period <= 0 is treated as
	// 1 ns instead of panicking as time.NewTicker does.
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of time.Ticker that Clock users need.
type Ticker interface {
	// C is the channel ticks are delivered on (buffer 1; slow readers miss ticks).
	C() <-chan time.Time
	// Stop turns the ticker off; no more ticks are sent after it returns.
	Stop()
	// Reset stops the ticker and restarts it with period d.
	Reset(d time.Duration)
}

// RealClock returns a Clock backed by package time.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) NewTicker(d time.Duration) Ticker {
	return realTicker{time.NewTicker(positive(d))}
}

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(positive(d)) }

func positive(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Nanosecond
	}
	return d
}

// FakeClock is a manual Clock for deterministic tests: time stands still until
// Advance moves it, and Advance fires every timer and ticker that falls due, in
// deadline order (ties in creation order), before it returns. Channels have a
// buffer of one and sends never block, like package time's. BlockUntil lets a
// test wait until the code under test has armed its timers.
//
// A FakeClock is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	waiters []*fakeWaiter
	changed chan struct{} // closed and replaced whenever waiters change
}

type fakeWaiter struct {
	at     time.Time
	seq    uint64
	period time.Duration // 0 for a one-shot timer
	ch     chan time.Time
}

// NewFakeClock returns a FakeClock that reads start until advanced.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the fake time elapsed since t.
func (c *FakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// After returns a channel that receives the fake time once Advance has moved
// the clock by d. A d <= 0 fires at once.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.addLocked(&fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// NewTicker returns a ticker driven by Advance. A period <= 0 is treated as 1 ns.
func (c *FakeClock) NewTicker(d time.Duration) Ticker {
	d = positive(d)
	w := &fakeWaiter{period: d, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	w.at = c.now.Add(d)
	c.addLocked(w)
	return &fakeTicker{c: c, w: w}
}

// Advance moves the clock forward by d (d <= 0 does nothing) and fires every
// timer and ticker that falls due, in order. A ticker that falls due several
// times during one Advance delivers one tick (its channel holds one), like
// time.Ticker with a slow reader.
func (c *FakeClock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	target := c.now.Add(d)
	for {
		sort.Slice(c.waiters, func(i, j int) bool {
			a, b := c.waiters[i], c.waiters[j]
			if !a.at.Equal(b.at) {
				return a.at.Before(b.at)
			}
			return a.seq < b.seq
		})
		if len(c.waiters) == 0 || c.waiters[0].at.After(target) {
			break
		}
		w := c.waiters[0]
		c.now = w.at
		select {
		case w.ch <- w.at:
		default:
		}
		if w.period == 0 {
			c.waiters = c.waiters[1:]
			continue
		}
		// The channel already holds this tick and nobody can read it before
		// Advance returns, so further ticks due within this Advance would be
		// dropped: move straight to the first tick after target.
		next := w.at.Add((target.Sub(w.at)/w.period + 1) * w.period)
		w.at = next
	}
	c.now = target
	c.notifyLocked()
}

// Waiters returns the number of armed timers and tickers.
func (c *FakeClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntil waits until at least n timers or tickers are armed, or ctx ends
// (then it returns ctx's error). Use it before Advance so the code under test
// has armed the timer that Advance is meant to fire.
func (c *FakeClock) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, ch := len(c.waiters), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) addLocked(w *fakeWaiter) {
	c.seq++
	w.seq = c.seq
	c.waiters = append(c.waiters, w)
	c.notifyLocked()
}

func (c *FakeClock) removeLocked(w *fakeWaiter) {
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			c.notifyLocked()
			return
		}
	}
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTicker struct {
	c *FakeClock
	w *fakeWaiter
}

func (t *fakeTicker) C() <-chan time.Time { return t.w.ch }

func (t *fakeTicker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.removeLocked(t.w)
}

func (t *fakeTicker) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.removeLocked(t.w)
	t.w.period = positive(d)
	t.w.at = t.c.now.Add(t.w.period)
	t.c.addLocked(t.w)
}

var (
	_ Clock = (*FakeClock)(nil)
	_ Clock = realClock{}
)
