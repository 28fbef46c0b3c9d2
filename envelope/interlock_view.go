package envelope

import (
	"context"
)

// View returns the read-only view of the rig for everyone but cmd/.
func (il *Interlock) View() *View { return &View{il: il} }

// View is a read-only view of the rig: readings, the envelope, the latch and
// a dry run of the checks. It holds no writable handle.
type View struct{ il *Interlock }

// Readings reads a fresh snapshot of every instrument.
func (v *View) Readings(ctx context.Context) Readings { return v.il.poll(ctx) }

// Envelope returns the envelope in force.
func (v *View) Envelope() *Envelope { return v.il.env }

// Latched reports whether the interlock is latched, and why.
func (v *View) Latched() (bool, string) { return v.il.Latched() }

// DryRun checks a against a fresh snapshot and the interlock's history
// without executing or auditing it.
func (v *View) DryRun(ctx context.Context, a Action) error {
	r := v.il.poll(ctx)
	il := v.il
	il.mu.Lock()
	defer il.mu.Unlock()
	if il.latched && !il.env.IsSafe(a) {
		return violation(RuleLatched, a.Channel(), "latched by %s", il.latchReason)
	}
	return il.env.Check(a, r, il.state)
}
