package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// routed is one message as Out received it, with its caller.
type routed struct {
	caller string
	env    *wire.Envelope
}

// routeRec records every published message with the caller it is for.
type routeRec struct {
	mu   sync.Mutex
	msgs []routed
}

func (o *routeRec) Publish(_ context.Context, caller string, env *wire.Envelope) error {
	o.mu.Lock()
	o.msgs = append(o.msgs, routed{caller, env})
	o.mu.Unlock()
	return nil
}

// to returns the messages of session sid published for caller, in order.
func (o *routeRec) to(caller, sid string) []*wire.Envelope {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*wire.Envelope
	for _, m := range o.msgs {
		if m.caller == caller && m.env.SessionID != nil && m.env.SessionID.String() == sid {
			out = append(out, m.env)
		}
	}
	return out
}

// handoffACL lets pipeline-7 own any session and viewer only leak checks.
func handoffACL(c *Config) {
	c.Handoff = HandoffConfig{Local: "local", Callers: map[string]gate.CallerACL{
		"harness-alpha-001": {Capabilities: []string{"*"}, MaxRiskLevel: capability.R4, MaxDataClassification: gate.T4},
		"pipeline-7":        {Capabilities: []string{"*"}, MaxRiskLevel: capability.R3, MaxDataClassification: gate.T4},
		"viewer":            {Capabilities: []string{"leak-check"}, MaxRiskLevel: capability.R1, MaxDataClassification: gate.T1},
		"local":             {Capabilities: []string{"*"}, MaxRiskLevel: capability.R3, MaxDataClassification: gate.T2},
	}}
}

// ownedHarness runs a rig-status session of steps of d as alpha, with the
// hand-off ACL and a routing recorder; it returns when the session runs.
func ownedHarness(t *testing.T, path string, steps int, d time.Duration) (*harness, *routeRec, string) {
	t.Helper()
	rec := &routeRec{}
	h, _ := fakeHarnessAt(t, path, steps, d, func(c *Config) { handoffACL(c); c.Out = rec })
	res := h.submit(t, "alpha", submitEnv(t, "rig-status", `{}`, ""))
	if res.SessionID == "" {
		t.Fatalf("not accepted: %v", res.Replies)
	}
	h.waitState(t, res.SessionID, lifecycle.Running)
	return h, rec, res.SessionID
}

// ownershipEvents returns the ownership_changed events among msgs.
func ownershipEvents(t *testing.T, msgs []*wire.Envelope) []wire.OwnershipChanged {
	t.Helper()
	var out []wire.OwnershipChanged
	for _, ev := range events(t, msgs) {
		if ev.EventType == wire.EventOwnershipChanged {
			var oc wire.OwnershipChanged
			if err := json.Unmarshal(ev.Data, &oc); err != nil {
				t.Fatal(err)
			}
			out = append(out, oc)
		}
	}
	return out
}

func auditKinds(t *testing.T, st *store.Store, sid string) (n int, details []string) {
	t.Helper()
	es, err := st.Audit().Replay(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind == audit.KindOwnership {
			n++
			details = append(details, e.Detail)
		}
	}
	return n, details
}

func TestHandoffMovesOwnershipAndEvents(t *testing.T) {
	ctx := context.Background()
	h, out, sid := ownedHarness(t, "", 400, 10*time.Millisecond)
	before, _ := h.st.Session(ctx, sid)

	rec, err := h.e.Handoff(ctx, HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "pipeline-7", Reason: "night shift", RequestID: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Index != 1 || rec.From != "harness-alpha-001" || rec.To != "pipeline-7" || rec.By != "harness-alpha-001" ||
		rec.Via != ViaHandoff || rec.Seq <= before.LastSeq || rec.RequestID != "m-1" {
		t.Fatalf("record %+v (last seq before %d)", rec, before.LastSeq)
	}
	// A redelivered request is not done twice.
	again, err := h.e.Handoff(ctx, HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "pipeline-7", RequestID: "m-1"})
	if err != nil || again != rec {
		t.Fatalf("redelivery: %+v %v", again, err)
	}
	chain, owner, err := h.e.Ownership(ctx, sid)
	if err != nil || owner != "pipeline-7" || len(chain) != 1 || chain[0] != rec {
		t.Fatalf("chain %+v owner %s %v", chain, owner, err)
	}

	// The old owner's control is refused, audited and answered; the new
	// owner's works.
	err = h.e.AuthorizeControl(ctx, sid, "harness-alpha-001", "abort", "m-2")
	if !errors.Is(err, ErrNotOwner) || !strings.Contains(err.Error(), "pipeline-7") {
		t.Fatalf("old owner's abort: %v", err)
	}
	if err := h.e.AuthorizeControl(ctx, sid, "pipeline-7", "abort", "m-3"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Abort(ctx, sid, "aborted by caller pipeline-7"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, sid, lifecycle.Aborted)

	alpha, p7 := out.to("harness-alpha-001", sid), out.to("pipeline-7", sid)
	// alpha: everything up to the hand-off, then only the refusal.
	ae := events(t, alpha)
	if last := ae[len(ae)-1]; last.EventType != wire.EventOwnershipChanged || last.Sequence != rec.Seq {
		t.Fatalf("alpha's last event %s #%d, want ownership_changed #%d", last.EventType, last.Sequence, rec.Seq)
	}
	contiguous(t, ae)
	rej := ofType(alpha, wire.TypeTaskRejected)
	if len(rej) != 1 {
		t.Fatalf("alpha got %d task_rejected", len(rej))
	}
	if tr, _ := rej[0].TaskRejected(); tr.ReasonCode != wire.ReasonForbidden || !strings.Contains(tr.ReasonMessage, "read-only") {
		t.Fatalf("refusal %+v", tr)
	}
	// pipeline-7: from the hand-off on, to session_closed ABORTED.
	pe := events(t, p7)
	if pe[0].EventType != wire.EventOwnershipChanged || pe[0].Sequence != rec.Seq {
		t.Fatalf("pipeline-7's first event %s #%d", pe[0].EventType, pe[0].Sequence)
	}
	for i, ev := range pe {
		if ev.Sequence != rec.Seq+uint64(i) {
			t.Fatalf("pipeline-7's event %d has sequence %d", i, ev.Sequence)
		}
	}
	if last := pe[len(pe)-1]; last.EventType != wire.EventSessionClosed || !strings.Contains(string(last.Data), "ABORTED") {
		t.Fatalf("pipeline-7's last event %s %s", last.EventType, last.Data)
	}
	if oc := ownershipEvents(t, p7); len(oc) != 1 || oc[0].From != "harness-alpha-001" || oc[0].To != "pipeline-7" ||
		oc[0].Reason != "night shift" || oc[0].Index != 1 || oc[0].RequestID != "m-1" {
		t.Fatalf("ownership_changed %+v", oc)
	}
	// The session id (the correlation) is the same throughout.
	for _, m := range append(alpha, p7...) {
		if m.SessionID.String() != sid {
			t.Fatalf("message %s for session %s", m.Type, m.SessionID)
		}
	}
	h.storedSeqs(t, sid)
	if n, ds := auditKinds(t, h.st, sid); n != 2 || !strings.Contains(ds[0], "ownership_changed") || !strings.Contains(ds[1], "control_refused") {
		t.Fatalf("ownership audit entries %d: %v", n, ds)
	}
	if err := h.st.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Audit().Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestHandoffRefusals(t *testing.T) {
	ctx := context.Background()
	h, out, sid := ownedHarness(t, "", 400, 10*time.Millisecond)
	unknown := uuid.NewString()
	for _, tc := range []struct {
		name    string
		req     HandoffRequest
		want    error
		code    string
		replied bool // a task_rejected goes to By
	}{
		{"unknown session", HandoffRequest{SessionID: unknown, By: "harness-alpha-001", To: "pipeline-7"}, ErrNotFound, wire.ReasonNotFound, true},
		{"not the owner", HandoffRequest{SessionID: sid, By: "pipeline-7", To: "pipeline-7"}, ErrNotOwner, wire.ReasonForbidden, true},
		{"no verified caller", HandoffRequest{SessionID: sid, To: "pipeline-7"}, ErrNotOwner, wire.ReasonForbidden, false},
		{"target may not use the capability", HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "viewer"}, ErrHandoffTarget, wire.ReasonForbidden, true},
		{"target unknown", HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "gamma"}, ErrHandoffTarget, wire.ReasonForbidden, true},
		{"target is the technician", HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "local"}, ErrHandoffTarget, wire.ReasonForbidden, true},
		{"target is the owner", HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "harness-alpha-001"}, ErrHandoffInvalid, wire.ReasonInvalidInput, true},
		{"no target", HandoffRequest{SessionID: sid, By: "harness-alpha-001"}, ErrHandoffInvalid, wire.ReasonInvalidInput, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.RequestID = uuid.NewString()
			before, _ := h.st.Session(ctx, sid)
			_, err := h.e.Handoff(ctx, tc.req)
			if !errors.Is(err, tc.want) || RefusalCode(err) != tc.code {
				t.Fatalf("err %v (code %s), want %v (%s)", err, RefusalCode(err), tc.want, tc.code)
			}
			after, _ := h.st.Session(ctx, sid)
			if after.CallerID != "harness-alpha-001" || after.LastSeq < before.LastSeq {
				t.Fatalf("session changed: %+v", after)
			}
			if chain, owner, _ := h.e.Ownership(ctx, sid); len(chain) != 0 || owner != "harness-alpha-001" {
				t.Fatalf("chain %+v owner %s", chain, owner)
			}
			got := 0
			for _, m := range out.to(tc.req.By, tc.req.SessionID) {
				if m.Type == wire.TypeTaskRejected {
					if tr, _ := m.TaskRejected(); tr.ReasonCode == tc.code {
						got++
					}
				}
			}
			if tc.replied != (got > 0) {
				t.Fatalf("task_rejected %s to %q: %d, want one: %v", tc.code, tc.req.By, got, tc.replied)
			}
		})
	}
	// No event announced any of them; every refusal is audited.
	if oc := ownershipEvents(t, out.to("harness-alpha-001", sid)); len(oc) != 0 {
		t.Fatalf("ownership events %+v", oc)
	}
	if n, _ := auditKinds(t, h.st, sid); n != 7 {
		t.Fatalf("%d ownership audit entries of the session, want 7 refusals", n)
	}
	// An ended session keeps its owner.
	if err := h.e.Abort(ctx, sid, "test"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, sid, lifecycle.Aborted)
	_, err := h.e.Handoff(ctx, HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "pipeline-7", RequestID: "m-end"})
	if !errors.Is(err, ErrSessionEnded) || RefusalCode(err) != wire.ReasonSessionEnded {
		t.Fatalf("ended: %v", err)
	}
	if _, err := h.e.Takeover(ctx, sid, "ana", ""); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("takeover of an ended session: %v", err)
	}
	if err := h.st.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTakeoverAndHandback(t *testing.T) {
	ctx := context.Background()
	h, out, sid := ownedHarness(t, "", 400, 10*time.Millisecond)
	if _, err := h.e.Takeover(ctx, sid, "", ""); !errors.Is(err, ErrHandoffInvalid) {
		t.Fatalf("takeover without an operator: %v", err)
	}
	tk, err := h.e.Takeover(ctx, sid, "ana", "valve check")
	if err != nil {
		t.Fatal(err)
	}
	if tk.To != "local" || tk.From != "harness-alpha-001" || tk.By != "ana" || tk.Via != ViaTakeover {
		t.Fatalf("takeover %+v", tk)
	}
	if _, err := h.e.Takeover(ctx, sid, "bob", ""); !errors.Is(err, ErrTakenOver) {
		t.Fatalf("second takeover: %v", err)
	}
	// The harness's remote control and hand-off are refused meanwhile.
	if err := h.e.AuthorizeControl(ctx, sid, "harness-alpha-001", "abort", "m-a"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("harness abort while taken over: %v", err)
	}
	if _, err := h.e.Handoff(ctx, HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "pipeline-7", RequestID: "m-h"}); !errors.Is(err, ErrTakenOver) {
		t.Fatalf("harness hand-off while taken over: %v", err)
	}
	// Events keep being recorded, for the technician.
	time.Sleep(50 * time.Millisecond)
	if len(events(t, out.to("local", sid))) < 2 {
		t.Fatal("no events to the technician")
	}
	hb, err := h.e.Handback(ctx, sid, "ana", "")
	if err != nil {
		t.Fatal(err)
	}
	if hb.From != "local" || hb.To != "harness-alpha-001" || hb.Via != ViaHandback || hb.Index != 2 {
		t.Fatalf("handback %+v", hb)
	}
	if _, err := h.e.Handback(ctx, sid, "ana", ""); !errors.Is(err, ErrNotTakenOver) {
		t.Fatalf("second handback: %v", err)
	}
	if err := h.e.AuthorizeControl(ctx, sid, "harness-alpha-001", "abort", "m-b"); err != nil {
		t.Fatalf("harness abort after handback: %v", err)
	}
	if err := h.e.Abort(ctx, sid, "done"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, sid, lifecycle.Aborted)
	// alpha saw both changes; its events resume after the handback.
	ae := events(t, out.to("harness-alpha-001", sid))
	oc := ownershipEvents(t, out.to("harness-alpha-001", sid))
	if len(oc) != 2 || oc[0].Via != ViaTakeover || oc[1].Via != ViaHandback {
		t.Fatalf("alpha's ownership events %+v", oc)
	}
	if last := ae[len(ae)-1]; last.EventType != wire.EventSessionClosed {
		t.Fatalf("alpha's last event %s", last.EventType)
	}
	if chain, owner, _ := h.e.Ownership(ctx, sid); len(chain) != 2 || owner != "harness-alpha-001" {
		t.Fatalf("chain %+v owner %s", chain, owner)
	}
	if err := h.st.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestHandoffRecovered(t *testing.T) {
	ctx := context.Background()
	rec := &routeRec{}
	h, _ := fakeHarnessAt(t, "", 20, 10*time.Millisecond, func(c *Config) { handoffACL(c); c.Out = rec })
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	sid := res.SessionID
	deadline := time.Now().Add(10 * time.Second)
	for {
		if cp, ok, _ := h.st.LastCheckpoint(ctx, sid); ok && cp.Seq > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ho, err := h.e.Handoff(ctx, HandoffRequest{SessionID: sid, By: "harness-alpha-001", To: "pipeline-7", RequestID: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	rec2 := &routeRec{}
	h2, recs := restart(t, h, 20, 5*time.Millisecond, func(c *Config) { handoffACL(c); c.Out = rec2 })
	if len(recs) != 1 || recs[0].Decision.Action != ActResume || recs[0].Err != nil {
		t.Fatalf("recoveries %+v", recs)
	}
	chain, owner, err := h2.e.Ownership(ctx, sid)
	if err != nil || owner != "pipeline-7" || len(chain) != 1 || chain[0] != ho {
		t.Fatalf("after restart: chain %+v owner %s %v", chain, owner, err)
	}
	if err := h2.e.AuthorizeControl(ctx, sid, "harness-alpha-001", "abort", ""); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("old owner after restart: %v", err)
	}
	h2.waitState(t, sid, lifecycle.Completed)
	if n := len(rec2.to("harness-alpha-001", sid)); n != 0 {
		t.Fatalf("%d messages to the old owner after the restart", n)
	}
	p7 := rec2.to("pipeline-7", sid)
	if p7[len(p7)-1].Type != wire.TypeTaskCompleted {
		t.Fatalf("new owner's last message %s", p7[len(p7)-1].Type)
	}
	h2.storedSeqs(t, sid)
}

// TestHandoffPendingRefused: a session awaiting its approval keeps its
// owner (its task_accepted belongs to the submitter); once approved, the
// hand-off works, and the lower ceiling of the target is checked against
// the assessed risk (R3: lowrisk, authorised up to R2, is refused).
func TestHandoffPendingRefused(t *testing.T) {
	ctx := context.Background()
	h, _ := fakeHarnessAt(t, "", 400, 10*time.Millisecond, func(c *Config) {
		handoffACL(c)
		c.Handoff.Callers["lowrisk"] = gate.CallerACL{Capabilities: []string{"*"}, MaxRiskLevel: capability.R2, MaxDataClassification: gate.T4}
	})
	res, apr := pendingSubmit(t, h)
	req := HandoffRequest{SessionID: res.SessionID, By: "harness-alpha-001", To: "pipeline-7", RequestID: "m-1"}
	if _, err := h.e.Handoff(ctx, req); !errors.Is(err, ErrState) || RefusalCode(err) != wire.ReasonInvalidState {
		t.Fatalf("hand-off while PENDING: %v", err)
	}
	if _, err := h.e.Takeover(ctx, res.SessionID, "ana", ""); !errors.Is(err, ErrState) {
		t.Fatalf("takeover while PENDING: %v", err)
	}
	if err := h.e.Approve(ctx, apr, "olga"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Running)
	req.To, req.RequestID = "lowrisk", "m-2"
	if _, err := h.e.Handoff(ctx, req); !errors.Is(err, ErrHandoffTarget) || !strings.Contains(err.Error(), "R3") {
		t.Fatalf("hand-off of an R3 session to an R2 caller: %v", err)
	}
	req.To, req.RequestID = "pipeline-7", "m-3"
	if _, err := h.e.Handoff(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Abort(ctx, res.SessionID, "test"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Aborted)
}
