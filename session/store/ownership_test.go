package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
)

func TestTransferChain(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	if _, _, err := s.Create(ctx, Session{ID: "s1", Capability: "rig-status", CallerID: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Transition(ctx, "s1", Change{To: lifecycle.Running, Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	note := Emit{Type: lifecycle.EventWarning, Data: map[string]any{"code": "ownership_changed", "message": "m"}}
	transfer := func(rec Ownership, evs ...Emit) (Ownership, Session, []Event, error) {
		var o Ownership
		var sess Session
		var out []Event
		err := s.Update(ctx, func(w *Tx) error {
			var err error
			o, sess, out, err = w.Transfer("s1", rec, evs...)
			return err
		})
		return o, sess, out, err
	}
	// Refusals change nothing.
	for _, tc := range []struct {
		name string
		rec  Ownership
		evs  []Emit
		want error
	}{
		{"not the owner", Ownership{From: "beta", To: "gamma", By: "beta", Via: "handoff"}, []Emit{note}, ErrNotOwner},
		{"unknown session", Ownership{From: "alpha", To: "beta", By: "alpha", Via: "handoff"}, []Emit{note}, nil},
		{"no event", Ownership{From: "alpha", To: "beta", By: "alpha", Via: "handoff"}, nil, nil},
		{"no target", Ownership{From: "alpha", By: "alpha", Via: "handoff"}, []Emit{note}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.name == "unknown session" {
				err = s.Update(ctx, func(w *Tx) error { _, _, _, err := w.Transfer("nope", tc.rec, tc.evs...); return err })
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("err %v", err)
				}
			} else if _, _, _, err = transfer(tc.rec, tc.evs...); err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			sess, _ := s.Session(ctx, "s1")
			chain, _ := s.Ownership(ctx, "s1")
			if sess.CallerID != "alpha" || len(chain) != 0 || sess.LastSeq != 1 {
				t.Fatalf("changed: %+v %+v", sess, chain)
			}
		})
	}
	o, sess, evs, err := transfer(Ownership{From: "alpha", To: "beta", By: "alpha", Via: "handoff", RequestID: "m1"}, note)
	if err != nil {
		t.Fatal(err)
	}
	if o.Index != 1 || o.Seq != 2 || o.At.IsZero() || sess.CallerID != "beta" || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("%+v %+v %+v", o, sess, evs)
	}
	if _, _, _, err := transfer(Ownership{From: "beta", To: "alpha", By: "beta", Via: "handoff"}, note); err != nil {
		t.Fatal(err)
	}
	chain, err := s.Ownership(ctx, "s1")
	if err != nil || len(chain) != 2 || chain[1].Index != 2 || chain[1].From != "beta" || chain[1].Seq != 3 {
		t.Fatalf("chain %+v %v", chain, err)
	}
	es, _ := s.Audit().Replay(ctx, "s1")
	n := 0
	for _, e := range es {
		if e.Kind == audit.KindOwnership {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d ownership audit entries", n)
	}
	mustCheck(t, s)
	// An ended session's owner is final.
	if _, _, err := s.Transition(ctx, "s1", Change{To: lifecycle.Completed, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := transfer(Ownership{From: "alpha", To: "beta", By: "alpha", Via: "handoff"}, note); !errors.Is(err, ErrEnded) {
		t.Fatalf("ended: %v", err)
	}
	// Check finds a chain that does not end with the owner.
	err = s.DB().Update(func(tx *bolt.Tx) error {
		v, _ := json.Marshal(Ownership{Index: 3, SessionID: "s1", From: "alpha", To: "mallory", By: "x", Via: "handoff"})
		return tx.Bucket(bucketOwnership).Bucket([]byte("s1")).Put(indexKey(3), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check of a forged chain: %v", err)
	}
}
