// Package gcburst raises the daemon's garbage-collection target while
// commands arrive in a burst, and puts the resting target back once the
// burst has passed.
//
// The daemon collects at GOGC 50 so that it stays small at rest (agent's
// tuneRuntime; docs/FOOTPRINT.md). In a flood of commands, decided in
// groups by the inbox, that target made the collector run every couple of
// megabytes allocated and take about a third of the daemon's CPU: another
// caller's submit then waited longer behind the flood (issue 24's bound).
// A Governor raises the target when the inbox reports a group of at least
// MinBurst commands, and restores the resting one after Quiet without
// another. At rest nothing changes: it has no goroutine and no timer until
// the first burst, and its timer stops with the burst.
package gcburst

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Defaults of Opts.
const (
	// DefaultBurstGOGC is the target while a burst lasts: the heap may grow
	// to three times its live size before a collection (GOGC 200 took the
	// daemon's CPU for a 3,000-command flood from about 1.5 s to 0.9 s,
	// for about 7 MiB more peak RSS; docs/FOOTPRINT.md).
	DefaultBurstGOGC = 200
	// DefaultMinBurst is the smallest group that counts as a burst: a
	// command alone, or a few together, is the daemon's ordinary work.
	DefaultMinBurst = 16
	// DefaultQuiet is how long after the last burst the resting target
	// returns.
	DefaultQuiet = 2 * time.Second
)

// Opts configures a Governor.
type Opts struct {
	Rest     int           // the resting GOGC (the daemon's), required
	Burst    int           // the GOGC of a burst (default DefaultBurstGOGC)
	MinBurst int           // the smallest group that is a burst (default DefaultMinBurst)
	Quiet    time.Duration // from the last burst to the resting GOGC (default DefaultQuiet)
	Logger   *slog.Logger  // nil: slog.Default()
	// SetGCPercent sets the target and returns the previous one (nil:
	// runtime/debug.SetGCPercent; a test gives its own).
	SetGCPercent func(int) int
}

// Governor switches GOGC between the resting and the burst target. A nil
// *Governor is valid and does nothing (GOGC set in the environment wins).
type Governor struct {
	o Opts

	mu      sync.Mutex
	raised  bool
	stopped bool
	last    time.Time   // the last burst, monotonic
	timer   *time.Timer // restores the resting target; nil before the first burst
	bursts  uint64      // times the target was raised
}

// New returns a Governor; the resting target is assumed to be in force.
func New(o Opts) *Governor {
	if o.Burst <= 0 {
		o.Burst = DefaultBurstGOGC
	}
	if o.MinBurst <= 0 {
		o.MinBurst = DefaultMinBurst
	}
	if o.Quiet <= 0 {
		o.Quiet = DefaultQuiet
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SetGCPercent == nil {
		o.SetGCPercent = debug.SetGCPercent
	}
	return &Governor{o: o}
}

// Burst is told that n commands arrived together (the inbox's group). From
// MinBurst on it raises the target, if it is not raised yet, and restores
// the resting one Quiet after the last such call.
func (g *Governor) Burst(n int) {
	if g == nil || n < g.o.MinBurst {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.last = time.Now()
	if !g.raised {
		g.raised = true
		g.bursts++
		g.o.SetGCPercent(g.o.Burst)
		g.o.Logger.Debug("gc target raised for a burst", "gogc", g.o.Burst, "group", n)
	}
	if g.timer == nil {
		g.timer = time.AfterFunc(g.o.Quiet, g.settle)
		return
	}
	g.timer.Reset(g.o.Quiet)
}

// settle is the timer's: it restores the resting target once Quiet has
// passed since the last burst (a Reset that raced it re-armed the timer).
func (g *Governor) settle() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.raised || g.stopped || time.Since(g.last) < g.o.Quiet {
		return
	}
	g.raised = false
	g.o.SetGCPercent(g.o.Rest)
	g.o.Logger.Debug("gc target back at rest", "gogc", g.o.Rest)
}

// Raised reports whether the burst target is in force, and how many
// bursts have raised it so far.
func (g *Governor) Raised() (raised bool, bursts uint64) {
	if g == nil {
		return false, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.raised, g.bursts
}

// Stop puts the resting target back and stops the timer; later bursts do
// nothing.
func (g *Governor) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
	}
	if g.raised {
		g.raised = false
		g.o.SetGCPercent(g.o.Rest)
	}
}
