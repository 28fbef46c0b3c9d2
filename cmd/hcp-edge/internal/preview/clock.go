package preview

import (
	"context"
	"sync"
	"time"

	"hcp-edge/session/executor"
)

// Clock is virtual process time: the instruments' clock and the recipe's
// are one and the same, and nothing passes unless a Sleep advances it. A
// Sleep of d steps the world (the plant and the observer, through the
// advance function) by d, in chunks of at most Chunk so that the physics,
// the furnace's comms watchdog and the observations keep the pace the real
// rig keeps. No timer of the runtime is involved: a wait costs the work of
// simulating it, not its duration.
//
// A Clock is driven by one goroutine (the run's); Now may be read from any.
type Clock struct {
	chunk time.Duration

	mu      sync.Mutex
	now     time.Time
	origin  time.Time
	pending []pendingTimer

	// advance steps the world by d to the clock's new now (the plant, the
	// watchdog kick) and observes it unless quiet.
	advance func(d time.Duration, quiet bool)
}

type pendingTimer struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a virtual clock at origin that advances in chunks of at
// most chunk (> 0).
func NewClock(origin time.Time, chunk time.Duration) *Clock {
	return &Clock{chunk: chunk, now: origin, origin: origin}
}

// Now is the current virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// restart makes now the origin of Elapsed.
func (c *Clock) restart() {
	c.mu.Lock()
	c.origin = c.now
	c.mu.Unlock()
}

// Elapsed is the virtual time since the origin.
func (c *Clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Sub(c.origin)
}

// Sleep advances virtual time by d, stepping the world chunk by chunk; it
// returns ctx's error as soon as ctx is done (the wall-time cap).
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	return c.run(ctx, d, false)
}

// pass advances virtual time by d without observing it: for the time an
// instrument takes inside an action (an acquisition), when the interlock is
// busy with that action.
func (c *Clock) pass(d time.Duration) { _ = c.run(context.Background(), d, true) }

func (c *Clock) run(ctx context.Context, d time.Duration, quiet bool) error {
	for d > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		step := min(d, c.chunk)
		d -= step
		c.mu.Lock()
		c.now = c.now.Add(step)
		now := c.now
		var due []pendingTimer
		keep := c.pending[:0]
		for _, t := range c.pending {
			if !t.at.After(now) {
				due = append(due, t)
			} else {
				keep = append(keep, t)
			}
		}
		c.pending = keep
		c.mu.Unlock()
		if c.advance != nil {
			c.advance(step, quiet)
		}
		for _, t := range due {
			t.ch <- now
		}
	}
	return ctx.Err()
}

// After delivers the virtual time once a Sleep has advanced it by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.pending = append(c.pending, pendingTimer{at: c.now.Add(d), ch: ch})
	return ch
}

// Process is the identity: the instruments' clock is process time.
func (c *Clock) Process(d time.Duration) time.Duration { return d }

var _ executor.Clock = (*Clock)(nil)
