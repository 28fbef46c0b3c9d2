package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/budget"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// TestSimClockStep is issue 25's clock-step test: in the middle of a MoS2
// synthesis on the in-process simulated rig, the agent's wall clock steps
// by +6 h and then to 6 h behind the true time (as NTP does on a Raspberry
// Pi that booted with a stale clock). The run completes, no token is
// refused (nothing refused but a stale reading the executor tries again),
// the wall-time budget counts the run's real time, and the audit chain,
// stamped across both steps, verifies. (The de-duplication window is the
// inbox's: transport/amqp TestDedupWindowClockStep steps its clock.)
func TestSimClockStep(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	t.Parallel() // its own rig and state
	pc := wallclock.New()
	h, b := simHarnessClock(t, pc)
	ctx := context.Background()
	res, apr := pendingSubmit(t, h)
	if err := h.e.Approve(ctx, apr, "olga"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Running)
	start := time.Now()

	progressed := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			evs, err := h.st.Events(ctx, res.SessionID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) >= n {
				return
			}
			if st, _ := h.e.State(ctx, res.SessionID); st.Terminal() {
				t.Fatalf("session ended %s after %d events, before the step", st, len(evs))
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d events, want %d", len(evs), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	progressed(8)
	pc.Step(6 * time.Hour)
	t.Logf("stepped +6h at %v", time.Since(start).Round(time.Millisecond))
	progressed(16)
	pc.Step(-12 * time.Hour)
	t.Logf("stepped to −6h at %v", time.Since(start).Round(time.Millisecond))
	if rep, ok := h.e.Budgets(res.SessionID); ok {
		for _, l := range rep.Lines {
			if l.Budget == budget.WallTime && l.Used > 86400 { // a step would count 6 h × the time scale
				t.Errorf("wall-time budget used %v %s after the steps", l.Used, l.Unit)
			}
		}
	}
	// A new task while the clock is stepped back is accepted and its token works.
	side := h.submit(t, "alpha", submitEnv(t, "rig-status", `{}`, ""))
	if side.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("rig-status after the steps: %v", side.Replies[0].Type)
	}
	h.waitState(t, side.SessionID, lifecycle.Completed)

	st := h.waitTerminal(t, res.SessionID)
	back, fwd := pc.Steps()
	t.Logf("ended %s after %v; wall clock steps seen: %v, %v", st, time.Since(start).Round(time.Millisecond), back, fwd)
	if st != lifecycle.Completed {
		snap := b.Plant.Snapshot()
		if st != lifecycle.Failed || !overgrown(snap) { // as TestSimSeedEndToEnd: a loaded machine may overgrow
			msgs := h.out.of(res.SessionID, res.Replies)
			t.Fatalf("synthesis ended %s (last %s; plant layers %.3f, H2S %.2f× the plan)", st, msgs[len(msgs)-1].Payload, snap.Layers, exposureRatio(snap))
		}
		t.Logf("failed as it must on a loaded machine: %.2f× the planned H2S", exposureRatio(snap))
	}
	for _, e := range b.Audit.All() {
		if e.Decision == envelope.DecisionRefused && e.Rule != envelope.RuleStale {
			t.Errorf("refused: %+v", e)
		}
	}
	// Freshness is judged between instants of this process (a reading's
	// own stamp, the action's snapshot): both carry Go's monotonic
	// reading, which no step of the wall clock moves.
	r := b.Monitor.Status().Readings
	for name, at := range map[string]time.Time{"furnace": r.Furnace.At, "pressure": r.Pressure.At} {
		if !strings.Contains(at.String(), " m=") {
			t.Errorf("the %s reading's stamp %v has no monotonic reading: its freshness would follow the wall clock", name, at)
		}
	}
	n, err := h.st.Audit().Verify(ctx)
	if err != nil {
		t.Fatalf("audit chain after the steps: %v", err)
	}
	t.Logf("audit chain of %d entries verifies", n)
}

// TestHoldNewSessions: while Config.Hold gives a reason (the clock is not
// synchronised), a new task_submit is refused with task_rejected
// resource_unavailable and that reason, and no session is created; a
// session already running runs on to its end; once released, submits are
// accepted again.
func TestHoldNewSessions(t *testing.T) {
	var held atomic.Bool
	h, _ := fakeHarness(t, 20, 5*time.Millisecond, func(c *Config) {
		c.Hold = func() string {
			if held.Load() {
				return "clock not synchronised"
			}
			return ""
		}
	})
	running := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	if running.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("before the hold: %v", running.Replies[0].Type)
	}
	held.Store(true)
	res := h.submit(t, "alpha", submitEnv(t, "rig-status", `{}`, ""))
	if res.SessionID != "" || len(res.Replies) != 1 {
		t.Fatalf("held submit: %+v", res)
	}
	rej, err := res.Replies[0].TaskRejected()
	if err != nil || rej.ReasonCode != "resource_unavailable" || rej.ReasonMessage != "clock not synchronised" {
		t.Fatalf("held submit answered %+v %v", rej, err)
	}
	h.waitState(t, running.SessionID, lifecycle.Completed)
	held.Store(false)
	if res := h.submit(t, "alpha", submitEnv(t, "rig-status", `{}`, "")); res.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("released: %v", res.Replies[0].Type)
	}
}
