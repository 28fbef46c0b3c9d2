package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/internal/wallclock"
	"hcp-edge/session/atrest"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// skewClock is the wall clock moved by an offset the test sets.
type skewClock struct{ off atomic.Int64 }

func (c *skewClock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *skewClock) advance(d time.Duration) { c.off.Add(int64(d)) }

// accessHarness is a sealed harness whose engine restricts access
// decisions to olga and reads the skewed clock as its process clock.
func accessHarness(t *testing.T, path string, clk *skewClock, mod func(*Config)) *harness {
	t.Helper()
	key := atRestKey(t, keyHexA)
	return sealedHarnessAt(t, path, 2, time.Millisecond, func(c *Config) {
		protect(fullProtection, key)(c)
		c.Clock = wallclock.NewFrom(clk.now) // its advance is time passing, on both clocks
		c.AccessApprovers = []string{"olga", "piet"}
		c.AccessTimeout = time.Hour
		if mod != nil {
			mod(c)
		}
	})
}

// heldT4 submits a T4 leak-check on h, waits for its end, and returns the
// session id and its pending access request, checking that the caller
// heard access_pending before session_closed and no final message.
func heldT4(t *testing.T, h *harness) (string, store.AccessRequest) {
	t.Helper()
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, `{"data_classification":"T4"}`))
	if len(res.Replies) == 0 || res.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("replies %+v", res.Replies)
	}
	h.waitState(t, res.SessionID, lifecycle.Completed)
	r, err := h.st.Access(context.Background(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.AccessPending || r.FinalType != string(wire.TypeTaskCompleted) || !atrest.IsSealed(r.Held) || r.CallerID != "harness-alpha-001" {
		t.Fatalf("access request %+v", r)
	}
	msgs := h.out.of(res.SessionID, res.Replies)
	if n := len(ofType(msgs, wire.TypeTaskCompleted)) + len(ofType(msgs, wire.TypeTaskFailed)); n != 0 {
		t.Fatalf("%d final message(s) sent before the access decision", n)
	}
	evs := events(t, msgs)
	contiguous(t, evs)
	var pending, closed int
	for i, ev := range evs {
		switch ev.EventType {
		case EventAccessPending:
			pending = i
			var d accessData
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.Details.AccessID != r.ID || strings.Contains(string(ev.Data), `"steps"`) {
				t.Fatalf("access_pending %s (%v)", ev.Data, err)
			}
		case string(lifecycle.EventSessionClosed):
			closed = i
		}
	}
	if pending == 0 || closed != len(evs)-1 || pending > closed {
		t.Fatalf("access_pending at %d, session_closed at %d of %d events", pending, closed, len(evs))
	}
	return res.SessionID, r
}

func auditHead(t *testing.T, st *store.Store) uint64 {
	t.Helper()
	seq, _, err := st.Audit().Head()
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestAccessApproval: a T4 session's task_completed is held until an
// operator approves; bad input changes nothing; the approval releases it
// once, opens local reads (audited) until it ends, and can be renewed.
func TestAccessApproval(t *testing.T) {
	ctx := context.Background()
	clk := &skewClock{}
	h := accessHarness(t, "", clk, nil)
	sid, r := heldT4(t, h)

	refuse := func(name string, want error, f func() error) {
		t.Helper()
		before := auditHead(t, h.st)
		err := f()
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
		if after := auditHead(t, h.st); after != before {
			t.Fatalf("%s: the audit log moved %d → %d", name, before, after)
		}
		if got, _ := h.st.Access(ctx, r.ID); got.State != r.State || !got.ValidUntil.Equal(r.ValidUntil) {
			t.Fatalf("%s: request changed: %+v", name, got)
		}
		t.Logf("%s: %v", name, err)
	}
	refuse("read before approval", ErrAccessRequired, func() error { return h.e.ReadAccess(ctx, sid, "olga", "artifact_get", "x", "test") })
	refuse("no operator", ErrAccessOperator, func() error { _, err := h.e.ApproveAccess(ctx, r.ID, "", 0); return err })
	refuse("wrong operator", ErrAccessOperator, func() error { _, err := h.e.ApproveAccess(ctx, r.ID, "mallory", 0); return err })
	refuse("unknown id", ErrAccessUnknown, func() error { _, err := h.e.ApproveAccess(ctx, "acc-00000000", "olga", 0); return err })
	refuse("deny by wrong operator", ErrAccessOperator, func() error { _, err := h.e.DenyAccess(ctx, r.ID, "mallory", "no"); return err })

	got, err := h.e.ApproveAccess(ctx, sid, "olga", time.Hour) // by session id
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.AccessApproved || got.Operator != "olga" || got.Held != nil {
		t.Fatalf("approved %+v", got)
	}
	r, _ = h.st.Access(ctx, r.ID)
	if r.Held != nil {
		t.Fatal("the released message is still held")
	}
	fin := ofType(h.out.of(sid, nil), wire.TypeTaskCompleted)
	if len(fin) != 1 {
		t.Fatalf("%d task_completed after approval", len(fin))
	}
	tc, err := fin[0].TaskCompleted()
	if err != nil || !strings.Contains(string(tc.Outputs), `"steps":2`) {
		t.Fatalf("task_completed %s (%v)", tc.Outputs, err)
	}

	before := auditHead(t, h.st)
	if err := h.e.ReadAccess(ctx, sid, "piet", "artifact_get", "hcp://"+sid+"/artifacts/x", "test"); err != nil {
		t.Fatal(err)
	}
	if auditHead(t, h.st) != before+1 {
		t.Fatal("the approved read was not audited")
	}
	refuse("deny after approval", ErrAccessDecided, func() error { _, err := h.e.DenyAccess(ctx, r.ID, "olga", "late"); return err })

	clk.advance(2 * time.Hour)
	refuse("read after the approval ended", ErrAccessExpired, func() error { return h.e.ReadAccess(ctx, sid, "piet", "artifact_get", "x", "test") })

	// A renewal opens reads again and sends nothing.
	if _, err := h.e.ApproveAccess(ctx, r.ID, "piet", 0); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReadAccess(ctx, sid, "piet", "artifact_get", "x", "test"); err != nil {
		t.Fatal(err)
	}
	if n := len(ofType(h.out.of(sid, nil), wire.TypeTaskCompleted)); n != 1 {
		t.Fatalf("%d task_completed after the renewal", n)
	}
	es, err := h.st.Audit().Replay(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range es {
		if strings.Contains(e.Detail, "access_") || strings.Contains(e.Detail, `"access_id"`) {
			kinds = append(kinds, string(e.Kind)+":"+e.Detail[:min(40, len(e.Detail))])
		}
	}
	if len(kinds) != 5 { // requested, approved, read, renewed, read
		t.Fatalf("access audit entries: %q", kinds)
	}
}

// TestAccessDenyAndExpiry: a denial releases task_failed access_denied
// without the held data; an expired request cannot be approved and is
// denied by its timer; each session gets exactly one final message.
func TestAccessDenyAndExpiry(t *testing.T) {
	ctx := context.Background()
	clk := &skewClock{}
	h := accessHarness(t, "", clk, nil)

	sid, r := heldT4(t, h)
	if _, err := h.e.DenyAccess(ctx, r.ID, "olga", "export-controlled recipe"); err != nil {
		t.Fatal(err)
	}
	finals := append(ofType(h.out.of(sid, nil), wire.TypeTaskFailed), ofType(h.out.of(sid, nil), wire.TypeTaskCompleted)...)
	if len(finals) != 1 {
		t.Fatalf("%d final messages", len(finals))
	}
	tf, err := finals[0].TaskFailed()
	if err != nil || tf.ErrorCode != ErrorAccessDenied || !strings.Contains(tf.ErrorMessage, "olga") ||
		!strings.Contains(tf.ErrorMessage, "export-controlled") || string(tf.PartialOutputs) != "{}" || len(tf.Artifacts) != 0 {
		t.Fatalf("task_failed %+v (%v)", tf, err)
	}
	if _, err := h.e.ApproveAccess(ctx, r.ID, "olga", 0); !errors.Is(err, ErrAccessDecided) {
		t.Fatalf("approve after deny: %v", err)
	}
	if err := h.e.ReadAccess(ctx, sid, "olga", "artifact_get", "x", "test"); !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("read after deny: %v", err)
	}

	// Past its expiry (by the clock) before the timer fired: refused, unchanged.
	sid2, r2 := heldT4(t, h)
	clk.advance(2 * time.Hour)
	if _, err := h.e.ApproveAccess(ctx, r2.ID, "olga", 0); !errors.Is(err, ErrAccessExpired) {
		t.Fatalf("approve after expiry: %v", err)
	}
	if got, _ := h.st.Access(ctx, r2.ID); got.State != store.AccessPending {
		t.Fatalf("expired request changed: %+v", got)
	}
	if n := len(ofType(h.out.of(sid2, nil), wire.TypeTaskFailed)); n != 0 {
		t.Fatal("a final message before the timer")
	}

	// The timer denies a request nobody decided.
	h2 := accessHarness(t, "", &skewClock{}, func(c *Config) { c.AccessTimeout = 300 * time.Millisecond })
	sid3, r3 := heldT4(t, h2)
	deadline := time.Now().Add(10 * time.Second)
	var fin []*wire.Envelope
	for { // the message reaches Out after the commit
		got, _ := h2.st.Access(ctx, r3.ID)
		if fin = ofType(h2.out.of(sid3, nil), wire.TypeTaskFailed); got.State == store.AccessDenied && len(fin) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired request was not denied: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(fin) != 1 {
		t.Fatalf("%d task_failed after expiry", len(fin))
	}
	if tf, _ := fin[0].TaskFailed(); tf == nil || tf.ErrorCode != ErrorAccessDenied || !strings.Contains(tf.ErrorMessage, "no operator approved") {
		t.Fatalf("task_failed %+v", tf)
	}
}

// TestAccessHeldAcrossRestart: results held when the engine stops stay
// held in the state file; after the restart an approval releases them.
func TestAccessHeldAcrossRestart(t *testing.T) {
	ctx := context.Background()
	clk := &skewClock{}
	h := accessHarness(t, "", clk, nil)
	sid, r := heldT4(t, h)
	h.close()

	h2 := accessHarness(t, h.path, clk, nil)
	if _, err := h2.e.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	pending, err := h2.e.AccessRequests(ctx, true)
	if err != nil || len(pending) != 1 || pending[0].ID != r.ID || pending[0].Held != nil {
		t.Fatalf("pending after restart %+v %v", pending, err)
	}
	if _, err := h2.e.ApproveAccess(ctx, r.ID, "olga", 0); err != nil {
		t.Fatal(err)
	}
	if n := len(ofType(h2.out.of(sid, nil), wire.TypeTaskCompleted)); n != 1 {
		t.Fatalf("%d task_completed after approval across the restart", n)
	}
}

// resultExec is slowExec whose steps each emit an intermediate_result.
type resultExec struct{ slowExec }

func (x *resultExec) Plan(executor.Task) (executor.Recipe, error) {
	return &resultRecipe{slowRecipe{x: &x.slowExec}}, nil
}

type resultRecipe struct{ slowRecipe }

func (r *resultRecipe) Run(ctx context.Context, i int, env *executor.Env) error {
	if err := env.Sink.Emit(ctx, lifecycle.EventIntermediateResult, executor.IntermediateResult{ResultType: "raman_analysis",
		Data: map[string]any{"layer_count": 1, "mark": secretMark}}); err != nil {
		return err
	}
	return r.slowRecipe.Run(ctx, i, env)
}

// TestAccessWithholdsIntermediateResults: a T4 session's
// intermediate_result events name the result type but carry none of its
// values; a T3 session's carry them.
func TestAccessWithholdsIntermediateResults(t *testing.T) {
	key := atRestKey(t, keyHexA)
	h := newHarness(t, "", &fakeRig{env: testEnvelope(t)}, 1, []executor.Executor{&resultExec{slowExec{name: "leak-check", steps: 1, d: time.Millisecond}}},
		func(c *Config) {
			c.Trips = func(context.Context) []string { return nil }
			protect(fullProtection, key)(c)
		})
	for _, class := range []string{"T3", "T4"} {
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, `{"data_classification":"`+class+`"}`))
		h.waitState(t, res.SessionID, lifecycle.Completed)
		var found bool
		for _, ev := range events(t, h.out.of(res.SessionID, res.Replies)) {
			if ev.EventType != string(lifecycle.EventIntermediateResult) {
				continue
			}
			found = true
			leaks := strings.Contains(string(ev.Data), secretMark)
			if leaks != (class == "T3") || !strings.Contains(string(ev.Data), "raman_analysis") {
				t.Fatalf("%s intermediate_result %s", class, ev.Data)
			}
		}
		if !found {
			t.Fatalf("%s: no intermediate_result", class)
		}
	}
}
