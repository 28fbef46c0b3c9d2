package wallclock

import (
	"sync"
	"time"
)

// Clock is the process clock of the agent. The zero value is not usable:
// use New or NewFrom. It is safe for concurrent use.
type Clock struct {
	src   func() time.Time
	start time.Time // src() when the clock was made (with its monotonic reading for time.Now)

	mu     sync.Mutex
	step   time.Duration // the offset Step set (tests)
	minOff time.Duration // least offset of the wall clock from start + Elapsed seen by Now
	maxOff time.Duration // greatest such offset
}

// New returns the process clock backed by time.Now.
func New() *Clock { return NewFrom(nil) }

// NewFrom returns a clock backed by src (time.Now when nil). A fake src is
// both the wall and the monotonic clock of the tests that use it.
func NewFrom(src func() time.Time) *Clock {
	if src == nil {
		src = time.Now
	}
	return &Clock{src: src, start: src()}
}

// Now is the wall clock: the time to stamp a record with. It moves when the
// system clock steps (and when a test calls Step). Never judge a duration
// by the difference of two Now values that were stored: use MinAge.
func (c *Clock) Now() time.Time {
	t := c.src()
	c.mu.Lock()
	defer c.mu.Unlock()
	w := t
	if c.step != 0 {
		w = t.Round(0).Add(c.step)
	}
	off := w.Round(0).Sub(c.start.Round(0)) - t.Sub(c.start)
	c.minOff, c.maxOff = min(c.minOff, off), max(c.maxOff, off)
	return w
}

// Elapsed is the monotonic time since the clock was made. No step of the
// wall clock moves it.
func (c *Clock) Elapsed() time.Duration { return c.src().Sub(c.start) }

// Mono is the current instant with its monotonic reading, never stepped:
// the time to compare with other instants of this process (an instrument's
// reading stamped by its driver with time.Now). While a test has stepped
// the clock, its wall part is not the agent's wall clock: stamp with Now.
func (c *Clock) Mono() time.Time { return c.src() }

// Step shifts the wall clock by d, as NTP stepping the system clock would:
// Now moves by d, Elapsed and Mono do not. Steps add up. Tests only; the
// agent never calls it.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	c.step += d
	c.mu.Unlock()
	c.Now() // record the new offset
}

// Steps reports the least and the greatest offset of the wall clock from
// its start plus the monotonic time since, over every Now so far: how far
// the wall clock has stepped back and forward while this process ran.
func (c *Clock) Steps() (back, forward time.Duration) {
	c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.minOff, c.maxOff
}

// MinAge is a lower bound of the time that has passed since w, a wall
// instant read from Now (in this process, or by an earlier one): the
// smaller of its age by the wall clock and its age on this process's
// monotonic clock, where w is placed on that clock with the least offset
// the wall clock has had (Steps). A step of the wall clock forward makes
// nothing older; a step back makes stamps younger (kept longer). A w in
// the future has a negative age: MinAge(deadline) >= 0 means the deadline
// has passed whichever way the wall clock stepped.
func (c *Clock) MinAge(w time.Time) time.Duration {
	now := c.Now()
	el := c.Elapsed()
	c.mu.Lock()
	minOff := c.minOff
	c.mu.Unlock()
	byWall := now.Sub(w) // monotonic when both carry a reading: exact
	steady := c.start.Round(0).Add(el + minOff)
	return min(byWall, steady.Sub(w.Round(0)))
}

// MaxAge is an upper bound of the time that has passed since w, the
// counterpart of MinAge: the larger of its age by the wall clock and its
// age on the monotonic clock with the greatest offset the wall clock has
// had. Judge a permission's end by it (closed once MaxAge(end) >= 0): a
// step of the wall clock back never keeps a permission open longer, a step
// forward may close it early.
func (c *Clock) MaxAge(w time.Time) time.Duration {
	now := c.Now()
	el := c.Elapsed()
	c.mu.Lock()
	maxOff := c.maxOff
	c.mu.Unlock()
	byWall := now.Sub(w)
	steady := c.start.Round(0).Add(el + maxOff)
	return max(byWall, steady.Sub(w.Round(0)))
}

// Floor is the wall instant that stored stamps are aged from: the earlier
// of Now and the start's wall time plus the monotonic time since, moved by
// the least offset the wall clock has had. For a stamp w without a
// monotonic reading (one read back from disk), MinAge(w) is Floor().Sub(w),
// so "older than d" is "before Floor().Add(-d)", a cut a store can scan up
// to. It carries no monotonic reading.
func (c *Clock) Floor() time.Time {
	now := c.Now().Round(0)
	el := c.Elapsed()
	c.mu.Lock()
	minOff := c.minOff
	c.mu.Unlock()
	steady := c.start.Round(0).Add(el + minOff)
	if steady.Before(now) {
		return steady
	}
	return now
}

// Ceil is the latest the wall time may be: the later of Now and the
// start's wall time plus the monotonic time since, moved by the greatest
// offset the wall clock has had. For a stamp w without a monotonic reading,
// MaxAge(w) is Ceil().Sub(w). Judge an expiry written by an earlier process
// at Ceil: a step of the wall clock back never makes it valid again. It
// carries no monotonic reading.
func (c *Clock) Ceil() time.Time {
	now := c.Now().Round(0)
	el := c.Elapsed()
	c.mu.Lock()
	maxOff := c.maxOff
	c.mu.Unlock()
	steady := c.start.Round(0).Add(el + maxOff)
	if steady.After(now) {
		return steady
	}
	return now
}
