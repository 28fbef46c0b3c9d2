package executor

import (
	"context"
	"errors"
	"time"
)

// Clock is process time: the time the recipe's durations are written in.
// On the real rig it is the wall clock; against the simulator it runs
// TimeScale times faster, so that a two-hour recipe takes seconds. Every wait
// of an executor goes through it.
type Clock interface {
	// Now is the current process time.
	Now() time.Time
	// Sleep waits d of process time, or until ctx is done (its error).
	Sleep(ctx context.Context, d time.Duration) error
	// After delivers the process time once d of it has passed.
	After(d time.Duration) <-chan time.Time
	// Process converts a span of the instruments' clock (the wall clock the
	// readings are stamped with, such as the interval between two readings)
	// into process time.
	Process(wall time.Duration) time.Duration
}

// ScaledClock is a Clock running Scale times faster than the wall clock from
// the instant it was made: process time = origin + Scale × wall time elapsed.
// Scale 1 is the wall clock. It is safe for concurrent use.
type ScaledClock struct {
	scale  float64
	origin time.Time // process time at wallAt
	wallAt time.Time // wall instant (with a monotonic reading) of origin
	wall   func() time.Time
}

// NewScaledClock returns a clock that runs scale times faster than the wall
// clock, starting at the current wall time. scale must be positive.
func NewScaledClock(scale float64) (*ScaledClock, error) {
	if !(scale > 0) || scale > 1e6 {
		return nil, errors.New("executor: clock scale must be in (0, 1e6]")
	}
	now := time.Now()
	return &ScaledClock{scale: scale, origin: now, wallAt: now, wall: time.Now}, nil
}

// WallClock is the unscaled clock of the real rig.
func WallClock() *ScaledClock {
	c, _ := NewScaledClock(1)
	return c
}

// Scale is process seconds per wall second.
func (c *ScaledClock) Scale() float64 { return c.scale }

// Now is the current process time.
func (c *ScaledClock) Now() time.Time {
	el := c.wall().Sub(c.wallAt)
	return c.origin.Add(time.Duration(float64(el) * c.scale))
}

// Wall converts a process duration to the wall duration it takes.
func (c *ScaledClock) Wall(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(float64(d) / c.scale)
}

// Process converts a wall duration (between two readings' own timestamps)
// into the process time it spans.
func (c *ScaledClock) Process(wall time.Duration) time.Duration {
	return time.Duration(float64(wall) * c.scale)
}

// Sleep waits d of process time or until ctx is done.
func (c *ScaledClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(c.Wall(d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// After delivers the process time once d of it has passed. The timer behind
// it is released by the runtime once it fires (Go ≥ 1.23 timers).
func (c *ScaledClock) After(d time.Duration) <-chan time.Time {
	out := make(chan time.Time, 1)
	time.AfterFunc(c.Wall(d), func() { out <- c.Now() })
	return out
}

var _ Clock = (*ScaledClock)(nil)
