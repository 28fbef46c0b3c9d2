package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestAccessRequests: one request per session, found by its id or its
// session's; an unknown session or a second request is refused; an old
// file without the buckets has none.
func TestAccessRequests(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	if _, err := s.AccessRequests(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Access(ctx, "acc-1"); !errors.Is(err, ErrNoAccess) {
		t.Fatalf("no bucket: %v", err)
	}
	if _, _, err := s.Create(ctx, Session{ID: "s1", DataClass: "T4"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	r := AccessRequest{ID: "acc-1", SessionID: "s1", CallerID: "c", DataClass: "T4", State: AccessPending, CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), Held: []byte("sealed")}
	for _, tc := range []struct {
		name string
		r    AccessRequest
		want error
	}{
		{"unknown session", AccessRequest{ID: "acc-2", SessionID: "nope", State: AccessPending}, ErrNotFound},
		{"bad id", AccessRequest{ID: "", SessionID: "s1", State: AccessPending}, ErrBadID},
		{"first", r, nil},
		{"second for the session", AccessRequest{ID: "acc-3", SessionID: "s1", State: AccessPending}, ErrExists},
	} {
		err := s.Update(ctx, func(w *Tx) error { return w.PutAccess(tc.r) })
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, id := range []string{"acc-1", "s1"} {
		got, err := s.Access(ctx, id)
		if err != nil || got.ID != "acc-1" || string(got.Held) != "sealed" || !got.ExpiresAt.Equal(r.ExpiresAt) {
			t.Fatalf("Access(%s) = %+v, %v", id, got, err)
		}
	}
	r.State, r.Operator, r.Held = AccessApproved, "olga", nil
	if err := s.Update(ctx, func(w *Tx) error { return w.PutAccess(r) }); err != nil {
		t.Fatal(err)
	}
	if p, err := s.AccessRequests(ctx, true); err != nil || len(p) != 0 {
		t.Fatalf("pending %+v %v", p, err)
	}
	if all, err := s.AccessRequests(ctx, false); err != nil || len(all) != 1 || all[0].State != AccessApproved {
		t.Fatalf("all %+v %v", all, err)
	}
}
