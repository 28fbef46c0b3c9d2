package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// TestTwoPersonApproval: a session whose risk level needs two signatures
// stays PENDING after the first (kept with the session, audited), refuses
// the same signer again without writing anything, and starts with a
// second signer's; the signatures carry uid, time and meaning.
func TestTwoPersonApproval(t *testing.T) {
	ctx := context.Background()
	h, _ := fakeHarness(t, 2, time.Millisecond, func(c *Config) { c.ApprovalsRequired = map[string]int{"R3": 2} })
	res, apr := pendingSubmit(t, h)
	olga := Signer{UID: 1001, User: "olga", Display: "Olga K", Known: true}
	a, err := h.e.ApproveAs(ctx, apr, olga)
	if err != nil || a.Have != 1 || a.Need != 2 {
		t.Fatalf("first approval: %+v %v", a, err)
	}
	time.Sleep(50 * time.Millisecond)
	if sess, _ := h.st.Session(ctx, res.SessionID); sess.State != lifecycle.Pending {
		t.Fatalf("state %s after one of two approvals", sess.State)
	}
	before := auditHead(t, h.st)
	// The same OS user under another display name is the same signer.
	if _, err := h.e.ApproveAs(ctx, apr, Signer{UID: 1001, User: "olga", Display: "olga2", Known: true}); !errors.Is(err, ErrSameApprover) {
		t.Fatalf("same signer twice: %v", err)
	}
	if after := auditHead(t, h.st); after != before {
		t.Fatalf("a refused approval moved the audit log %d → %d", before, after)
	}
	piet := Signer{UID: 1002, User: "piet", Display: "Piet", Known: true}
	if a, err = h.e.ApproveAs(ctx, apr, piet); err != nil || a.Have != 2 {
		t.Fatalf("second approval: %+v %v", a, err)
	}
	h.waitState(t, res.SessionID, lifecycle.Running)
	if len(a.Signatures) != 2 || a.Signatures[0].UID != 1001 || a.Signatures[1].UID != 1002 ||
		a.Signatures[1].Meaning != MeaningExecution || a.Signatures[0].At.IsZero() {
		t.Fatalf("signatures %+v", a.Signatures)
	}
}

// TestTwoPersonRelease: a T4 access request that needs two signatures
// keeps its results held after the first, refuses the same signer, and
// is released by a second; each signature says "released until ..." or
// "approved for release".
func TestTwoPersonRelease(t *testing.T) {
	ctx := context.Background()
	h := accessHarness(t, "", &skewClock{}, func(c *Config) { c.ApprovalsRequired = map[string]int{"T4": 2} })
	sid, r := heldT4(t, h)
	olga := Signer{UID: 1001, User: "olga", Display: "olga", Known: true}
	got, err := h.e.ApproveAccessAs(ctx, r.ID, olga, time.Hour)
	if err != nil || got.State != store.AccessPending || len(got.Approvals) != 1 || got.Approvals[0].Meaning != "approved for release" {
		t.Fatalf("first signature: %+v %v", got, err)
	}
	if n := len(ofType(h.out.of(sid, nil), wire.TypeTaskCompleted)); n != 0 {
		t.Fatalf("%d task_completed released after one of two signatures", n)
	}
	if err := h.e.ReadAccess(ctx, sid, "olga", "artifact_get", "x", "test"); !errors.Is(err, ErrAccessRequired) {
		t.Fatalf("read after one signature: %v", err)
	}
	if _, err := h.e.ApproveAccessAs(ctx, r.ID, olga, time.Hour); !errors.Is(err, ErrSameApprover) {
		t.Fatalf("same signer twice: %v", err)
	}
	got, err = h.e.ApproveAccessAs(ctx, r.ID, Signer{UID: 1002, User: "piet", Display: "piet", Known: true}, time.Hour)
	if err != nil || got.State != store.AccessApproved || len(got.Approvals) != 2 || got.Approvals[1].UID != 1002 {
		t.Fatalf("second signature: %+v %v", got, err)
	}
	if m := got.Approvals[1].Meaning; len(m) < len(MeaningReleased) || m[:len(MeaningReleased)] != MeaningReleased {
		t.Fatalf("meaning %q", m)
	}
}

// TestWithdrawRelease: a withdrawal ends an open release at once (local
// reads refused, access denied), is audited, and bad input (no reason, an
// unknown id, a second withdrawal, a pending request) changes nothing.
func TestWithdrawRelease(t *testing.T) {
	ctx := context.Background()
	h := accessHarness(t, "", &skewClock{}, nil)
	sid, r := heldT4(t, h)
	olga := Signer{UID: 1001, User: "olga", Display: "olga", Known: true}
	unchanged := func(name string, want error, f func() error) {
		t.Helper()
		before := auditHead(t, h.st)
		if err := f(); (want == nil && err == nil) || (want != nil && !errors.Is(err, want)) {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
		if after := auditHead(t, h.st); after != before {
			t.Fatalf("%s: the audit log moved %d → %d", name, before, after)
		}
	}
	unchanged("withdraw a pending request", ErrAccessNotReleased, func() error { _, err := h.e.WithdrawAccess(ctx, r.ID, olga, "why"); return err })
	if _, err := h.e.ApproveAccessAs(ctx, r.ID, olga, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReadAccess(ctx, sid, "olga", "artifact_get", "x", "test"); err != nil {
		t.Fatalf("read while released: %v", err)
	}
	unchanged("no reason", nil, func() error { _, err := h.e.WithdrawAccess(ctx, r.ID, olga, ""); return err })
	unchanged("unknown id", ErrAccessUnknown, func() error { _, err := h.e.WithdrawAccess(ctx, "acc-00000000", olga, "why"); return err })
	unchanged("not an access approver", ErrAccessOperator, func() error {
		_, err := h.e.WithdrawAccess(ctx, r.ID, Signer{UID: 7, Display: "mallory", Known: true}, "why")
		return err
	})
	got, err := h.e.WithdrawAccess(ctx, r.ID, olga, "released to the wrong project")
	if err != nil || got.WithdrawnBy != "olga" || got.WithdrawnAt.IsZero() {
		t.Fatalf("withdraw: %+v %v", got, err)
	}
	if err := h.e.ReadAccess(ctx, sid, "olga", "artifact_get", "x", "test"); !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("read after the withdrawal: %v", err)
	}
	unchanged("second withdrawal", ErrAccessNotReleased, func() error { _, err := h.e.WithdrawAccess(ctx, r.ID, olga, "again"); return err })
}
