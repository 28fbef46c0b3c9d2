package envelope

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Late is not stale (DESIGN.md §4). The interlock judges an action on a
// snapshot it reads itself, each instrument within ReadTimeout. On a busy
// host one of those reads can come back late, and the part it leaves empty
// makes the envelope refuse with stale_reading although the instrument is
// healthy. So a stale_reading refusal is not final at once: the interlock
// reads a new snapshot every half poll period of the instruments that were
// stale, for at most the wait bound of those instruments,
//
//	bound = 3 × poll period + ReadTimeout
//
// (the poll periods are the monitor's, FurnaceEvery for the furnace and
// OtherEvery for everything else; without a monitor the bound is
// ReadTimeout), and judges the action on the first snapshot that holds
// fresh readings. It never acts on a stale reading: each new snapshot is
// checked whole, as the first was. Only once the bound has passed is the
// action refused, and the refusal names the reading and how long it waited.
// An e-stop or a trip cancels the wait at once (it cancels the apply in
// flight).

// pollPeriods are the monitor's poll periods, which the bound of a wait for
// a fresh reading derives from. Zero without a monitor.
type pollPeriods struct {
	furnace, other time.Duration
}

// setPollPeriods tells the interlock the monitor's poll periods (NewMonitor).
func (il *Interlock) setPollPeriods(furnace, other time.Duration) {
	il.mu.Lock()
	il.polls = pollPeriods{furnace: furnace, other: other}
	il.mu.Unlock()
}

// staleParts reports which instruments of r have no reading younger than
// maxAge: a heated zone's controller (polled at the furnace's period), and
// any other instrument.
func staleParts(r Readings, maxAge time.Duration) (furnace, other bool) {
	old := func(at time.Time) bool { return at.IsZero() || r.At.Sub(at) > maxAge }
	furnace = old(r.Furnace.At)
	for _, z := range r.Zones {
		furnace = furnace || old(z.At)
	}
	other = old(r.Pressure.At)
	for _, f := range r.Flows {
		other = other || old(f.At)
	}
	for _, l := range r.Switches {
		other = other || old(l.At)
	}
	for _, l := range r.Inputs {
		other = other || old(l.At)
	}
	return furnace, other
}

// freshBound is how long an action refused for a stale reading may wait for
// a fresh one, and the pause between two snapshots while it waits: the
// bound and period of the slowest of the instruments r lacks.
func (il *Interlock) freshBound(r Readings) (bound, pause time.Duration) {
	il.mu.Lock()
	p := il.polls
	il.mu.Unlock()
	furnace, other := staleParts(r, il.env.MaxReadingAge())
	var period time.Duration
	if furnace {
		period = p.furnace
	}
	if other || !furnace {
		period = max(period, p.other)
	}
	return 3*period + il.opts.ReadTimeout, max(period/2, time.Millisecond)
}

// awaitFresh is called with an action refused for a stale reading on the
// snapshot r: it reads new snapshots until one is judged without a
// stale_reading refusal, or the bound has passed, or ctx ends. It returns
// the last snapshot, its verdict (nil: the action may go on), and how long
// it waited. Each snapshot feeds the envelope's history as the first did.
func (il *Interlock) awaitFresh(ctx context.Context, a Action, r Readings, v *Violation) (Readings, *Violation, time.Duration) {
	// The wait is measured on the monotonic clock, as its timer runs: the
	// interlock's Clock stamps readings and may be a test's or a stepped one.
	start := time.Now()
	bound, pause := il.freshBound(r)
	deadline := start.Add(bound)
	t := time.NewTimer(pause)
	defer t.Stop()
	for v != nil && v.Rule == RuleStale {
		now := time.Now()
		if !now.Before(deadline) {
			w := now.Sub(start)
			v = &Violation{Rule: v.Rule, Channel: v.Channel, Limit: v.Limit, Value: v.Value, Unit: v.Unit, Waited: w,
				Reason: fmt.Sprintf("%s; waited %v for a fresh one (bound %v)", v.Reason, w.Round(time.Millisecond), bound)}
			return r, v, w
		}
		t.Reset(min(pause, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			w := time.Since(start)
			v = &Violation{Rule: v.Rule, Channel: v.Channel, Limit: v.Limit, Value: v.Value, Unit: v.Unit, Waited: w,
				Reason: fmt.Sprintf("%s; the wait for a fresh one ended after %v: %v", v.Reason, w.Round(time.Millisecond), context.Cause(ctx))}
			return r, v, w
		case <-t.C:
		}
		r = il.snapshot(ctx)
		il.mu.Lock()
		il.env.Observe(il.state, r)
		v = nil
		if err := il.env.Check(a, r, il.state); err != nil {
			v = err.(*Violation)
		}
		il.mu.Unlock()
	}
	return r, v, time.Since(start)
}

// waitEnded is apply's end when the call's own deadline (a tool's timeout)
// or its cancellation ended before a fresh reading came (stale is the
// verdict it waited on): nothing was judged unsafe, the call ran out of
// time. It fails with the context's cause, audited as failed, rather than
// being refused as if an instrument were silent.
func (il *Interlock) waitEnded(ctx context.Context, session string, a Action, stale *Violation, waited time.Duration, safe bool) error {
	var err error = &FreshWaitEnded{Action: a, Stale: stale, Waited: waited, Cause: context.Cause(ctx)}
	if aerr := il.record(ctx, Entry{SessionID: session, Action: &a, Decision: DecisionFailed, Reason: err.Error(), TowardSafe: safe}); aerr != nil {
		err = errors.Join(err, aerr)
	}
	return err
}

// FreshWaitEnded is the error of an action whose own deadline (a tool's
// timeout) or cancellation (an e-stop, a trip, an abort) ended while the
// interlock waited for a fresh reading. It is not a refusal: nothing was
// judged unsafe, nothing was written, and it is audited as failed. It
// unwraps to the context's cause (context.DeadlineExceeded for a timeout);
// Stale is the verdict it waited on, for the message, not wrapped.
type FreshWaitEnded struct {
	Action Action
	Stale  *Violation
	Waited time.Duration // how long it waited (the tool statistics count it)
	Cause  error
}

func (e *FreshWaitEnded) Error() string {
	return fmt.Sprintf("envelope: %v: %v after %v, before a fresh reading (%v)", e.Action, e.Cause, e.Waited.Round(time.Millisecond), e.Stale)
}

// Unwrap returns the context's cause.
func (e *FreshWaitEnded) Unwrap() error { return e.Cause }
