package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

func TestDecide(t *testing.T) {
	ok := Facts{State: lifecycle.Running, Restorable: true, HasCheckpoint: true, Resumable: true,
		Outage: time.Second, Grace: time.Minute}
	with := func(f func(*Facts)) Facts { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		f    Facts
		act  Action
		code executor.Code
	}{
		{"resume", ok, ActResume, ""},
		{"paused holds", with(func(f *Facts) { f.State = lifecycle.Paused }), ActHold, ""},
		{"not restorable", with(func(f *Facts) { f.Restorable = false }), ActFail, executor.CodeInternal},
		{"expired", with(func(f *Facts) { f.Expired = true }), ActFail, executor.CodeTimeout},
		{"no checkpoint", with(func(f *Facts) { f.HasCheckpoint, f.Resumable = false, false }), ActFail, executor.CodeInternal},
		{"not resumable", with(func(f *Facts) { f.Resumable = false }), ActFail, executor.CodeInternal},
		{"latched", with(func(f *Facts) { f.Latched = true }), ActFail, executor.CodeSafetyViolation},
		{"trip condition", with(func(f *Facts) { f.Trips = []string{"overtemp"} }), ActFail, executor.CodeSafetyViolation},
		{"outage at grace", with(func(f *Facts) { f.Outage = time.Minute }), ActFail, executor.CodeInternal},
		{"relay off holds", with(func(f *Facts) { f.NotReady = "input relay_fb is false" }), ActHold, ""},
		{"relay off and latched fails", with(func(f *Facts) { f.NotReady, f.Latched = "input relay_fb is false", true }), ActFail, executor.CodeSafetyViolation},
		{"paused outside envelope", with(func(f *Facts) { f.State, f.Latched = lifecycle.Paused, true }), ActFail, executor.CodeSafetyViolation},
		{"aborting", with(func(f *Facts) { f.State = lifecycle.Aborting }), ActFinishAbort, ""},
		{"pending approval", Facts{State: lifecycle.Pending, Restorable: true, NeedApproval: true}, ActAwaitApproval, ""},
		{"pending approval expired", Facts{State: lifecycle.Pending, Restorable: true, NeedApproval: true, ApprovalExpiry: true}, ActReject, ""},
		{"pending accepted never ran", Facts{State: lifecycle.Pending, Restorable: true}, ActReject, ""},
		{"pending unusable", Facts{State: lifecycle.Pending}, ActReject, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.f)
			if d.Action != tc.act || d.Code != tc.code || d.Reason == "" {
				t.Fatalf("%+v, want %s %s", d, tc.act, tc.code)
			}
		})
	}
}

// restart closes h's engine mid-run and opens a new one on the same file.
func restart(t *testing.T, h *harness, steps int, d time.Duration, mod func(*Config)) (*harness, []Recovery) {
	t.Helper()
	h.close()
	h2, _ := fakeHarnessAt(t, h.path, steps, d, mod)
	recs, err := h2.e.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h2, recs
}

func fakeHarnessAt(t *testing.T, path string, steps int, d time.Duration, mod func(*Config)) (*harness, map[string]*slowExec) {
	t.Helper()
	xs := map[string]*slowExec{}
	var execs []executor.Executor
	for _, n := range []string{"leak-check", "rig-status", "cvd-material-synthesis"} {
		x := &slowExec{name: n, steps: steps, d: d}
		xs[n] = x
		execs = append(execs, x)
	}
	return newHarness(t, path, &fakeRig{env: testEnvelope(t)}, 1, execs, func(c *Config) {
		c.Trips = func(context.Context) []string { return nil }
		if mod != nil {
			mod(c)
		}
	}), xs
}

func TestRecover(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, h *harness) Result {
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		deadline := time.Now().Add(10 * time.Second)
		for {
			if cp, ok, _ := h.st.LastCheckpoint(ctx, res.SessionID); ok && cp.Seq > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no checkpoint")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return res
	}
	t.Run("resumes from checkpoint", func(t *testing.T) {
		h, _ := fakeHarness(t, 20, 10*time.Millisecond, nil)
		res := run(t, h)
		h2, recs := restart(t, h, 20, 5*time.Millisecond, nil)
		if len(recs) != 1 || recs[0].Decision.Action != ActResume || recs[0].Err != nil {
			t.Fatalf("recoveries %+v", recs)
		}
		h2.waitState(t, res.SessionID, lifecycle.Completed)
		evs := h2.storedSeqs(t, res.SessionID)
		found := false
		for _, e := range evs {
			found = found || (e.Type == lifecycle.EventStateChanged && strings.Contains(string(e.Data), lifecycle.ReasonRecovered))
		}
		if !found {
			t.Fatal("no recovered_from_checkpoint event")
		}
		msgs := h2.out.of(res.SessionID, nil)
		if msgs[len(msgs)-1].Type != wire.TypeTaskCompleted {
			t.Fatalf("ended with %s", msgs[len(msgs)-1].Type)
		}
		// The totals span the restart: every step once, every checkpoint
		// of the session, and at least the 20 steps' sleeps (5 ms after
		// the restart, 10 before).
		sum := summaryOf(t, h2, res.SessionID)
		cps, err := h2.st.Checkpoints(ctx, res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		took, err := capability.ParseDuration(sum.Duration)
		if err != nil || sum.StepsExecuted != 20 || sum.CheckpointsCreated != len(cps) || took < 100*time.Millisecond {
			t.Fatalf("summary %+v (%v), %d checkpoints stored", sum, err, len(cps))
		}
	})
	t.Run("held while an instrument's reading stays old", func(t *testing.T) {
		h, _ := fakeHarness(t, 20, 10*time.Millisecond, nil)
		res := run(t, h)
		rig := &oldGaugeRig{fakeRig: fakeRig{env: testEnvelope(t)}} // the gauge's last reading is 10 s old
		start := time.Now()
		h2, recs := restart(t, h, 20, 5*time.Millisecond, func(c *Config) { c.Rig = rig })
		if len(recs) != 1 || recs[0].Decision.Action != ActHold || !strings.Contains(recs[0].Decision.Reason, "gauge") {
			t.Fatalf("recoveries %+v", recs)
		}
		t.Logf("held after waiting %v for a fresh gauge reading: %s", time.Since(start).Round(time.Millisecond), recs[0].Decision.Reason)
		h2.waitState(t, res.SessionID, lifecycle.Paused)
	})
	t.Run("held in PAUSED while the relay is off", func(t *testing.T) {
		h, _ := fakeHarness(t, 20, 10*time.Millisecond, nil)
		res := run(t, h)
		rig := &relayRig{fakeRig: fakeRig{env: testEnvelope(t)}} // restarted with the relay de-energised
		h2, recs := restart(t, h, 20, 5*time.Millisecond, func(c *Config) { c.Rig = rig })
		if len(recs) != 1 || recs[0].Decision.Action != ActHold || !strings.Contains(recs[0].Decision.Reason, "relay_fb") {
			t.Fatalf("recoveries %+v", recs)
		}
		h2.waitState(t, res.SessionID, lifecycle.Paused)
		rig.on.Store(true) // the operator arms the rig, then resumes
		if err := h2.e.Resume(ctx, res.SessionID, "olga"); err != nil {
			t.Fatal(err)
		}
		h2.waitState(t, res.SessionID, lifecycle.Completed)
		paused := false
		for _, e := range h2.storedSeqs(t, res.SessionID) {
			paused = paused || (e.Type == lifecycle.EventStateChanged && strings.Contains(string(e.Data), "held after restart"))
		}
		if !paused {
			t.Fatal("no state_changed to PAUSED with the hold's reason")
		}
		if rs := summaryOf(t, h2, res.SessionID).RiskEvents; len(rs) != 1 || !strings.Contains(rs[0], " interlock_hold: ") {
			t.Fatalf("risk_events %q, want the hold", rs)
		}
	})
	t.Run("outage beyond grace fails", func(t *testing.T) {
		h, _ := fakeHarness(t, 20, 10*time.Millisecond, nil)
		res := run(t, h)
		h2, recs := restart(t, h, 20, time.Millisecond, func(c *Config) { c.RecoveryGrace = time.Nanosecond })
		if len(recs) != 1 || recs[0].Decision.Action != ActFail {
			t.Fatalf("recoveries %+v", recs)
		}
		st, _ := h2.e.State(ctx, res.SessionID)
		if st != lifecycle.Failed {
			t.Fatalf("state %s", st)
		}
		msgs := h2.out.of(res.SessionID, nil)
		tf, err := msgs[len(msgs)-1].TaskFailed()
		if err != nil || !strings.Contains(string(tf.ErrorDetails), `"last_checkpoint":"ckpt-`) || len(tf.PartialOutputs) < 3 {
			t.Fatalf("%+v %v", tf, err)
		}
		h2.storedSeqs(t, res.SessionID)
	})
	t.Run("trip condition fails", func(t *testing.T) {
		h, xs := fakeHarness(t, 20, 10*time.Millisecond, nil)
		res := run(t, h)
		_ = xs
		h2, recs := restart(t, h, 20, time.Millisecond, func(c *Config) {
			c.Trips = func(context.Context) []string { return []string{"overtemp on furnace.temperature"} }
		})
		if len(recs) != 1 || recs[0].Decision.Code != executor.CodeSafetyViolation {
			t.Fatalf("recoveries %+v", recs)
		}
		st, _ := h2.e.State(ctx, res.SessionID)
		if st != lifecycle.Failed {
			t.Fatalf("state %s", st)
		}
	})
	t.Run("pending approval waits again", func(t *testing.T) {
		h, _ := fakeHarness(t, 2, time.Millisecond, nil)
		res, apr := pendingSubmit(t, h)
		h2, recs := restart(t, h, 2, time.Millisecond, nil)
		if len(recs) != 1 || recs[0].Decision.Action != ActAwaitApproval {
			t.Fatalf("recoveries %+v", recs)
		}
		if err := h2.e.Approve(ctx, apr, "olga"); err != nil {
			t.Fatal(err)
		}
		h2.waitState(t, res.SessionID, lifecycle.Completed)
		h2.storedSeqs(t, res.SessionID)
	})
}

// oldGaugeRig is a fake rig whose gauge last answered 10 s ago.
type oldGaugeRig struct{ fakeRig }

func (r *oldGaugeRig) Readings(context.Context) envelope.Readings {
	rd := freshReadings(nil)
	rd.Pressure.At = rd.At.Add(-10 * time.Second)
	return rd
}

// relayRig is a fake rig that reports the interlock relay's read-back.
type relayRig struct {
	fakeRig
	on atomic.Bool
}

func (r *relayRig) Readings(context.Context) envelope.Readings {
	return freshReadings(map[string]envelope.Level{"relay_fb": {On: r.on.Load(), At: time.Now()}})
}
